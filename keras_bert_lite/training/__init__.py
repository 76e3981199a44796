"""Pre-training at scale: BERT's optimizer, strategies, the distributed loop and checkpoints.

The main job of `tpu/pretrain.py` (built-in corpus, held-out evaluation against baselines) lives in
`training.demo_data` and `training.demo_evaluation`, outside this public API.
"""

from keras_bert_lite.optimization import AdamW, WarmupLinearDecay, create_optimizer
from keras_bert_lite.training.distribute import STRATEGIES, get_strategy, precision_policy, use_jit_compile
from keras_bert_lite.training.pretraining_driver import run_pretraining
from keras_bert_lite.training.pretraining_loop import PretrainingLoop
from keras_bert_lite.training.run_checkpoints import (
    NonFiniteLossError,
    TrainingCheckpoints,
    export_pretrained,
    restore_model_weights,
)

__all__ = [
    "AdamW",
    "STRATEGIES",
    "NonFiniteLossError",
    "PretrainingLoop",
    "TrainingCheckpoints",
    "WarmupLinearDecay",
    "create_optimizer",
    "export_pretrained",
    "get_strategy",
    "precision_policy",
    "restore_model_weights",
    "run_pretraining",
    "use_jit_compile",
]
