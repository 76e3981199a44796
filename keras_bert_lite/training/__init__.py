"""Pre-training at scale: BERT's optimizer, strategies, the distributed loop and checkpoints."""

from keras_bert_lite.training.checkpointing import (
    NonFiniteLossError,
    TrainingCheckpoints,
    export_pretrained,
    restore_model_weights,
)
from keras_bert_lite.training.distribute import STRATEGIES, get_strategy
from keras_bert_lite.training.optimization import AdamW, WarmupLinearDecay, create_optimizer
from keras_bert_lite.training.pretraining import run_pretraining
from keras_bert_lite.training.pretraining_loop import PretrainingLoop

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
    "restore_model_weights",
    "run_pretraining",
]
