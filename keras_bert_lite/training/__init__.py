"""Pre-training at scale: strategies, the distributed loop and run checkpoints (BERT's optimizer is
`keras_bert_lite.optimization`; `tpu/pretrain.py` runs them on your data, and the main job,
`tpu/main_job.py`, on the built-in corpus)."""

from keras_bert_lite.training.distribute import get_strategy
from keras_bert_lite.training.pretraining_driver import run_pretraining
from keras_bert_lite.training.pretraining_loop import PretrainingLoop
from keras_bert_lite.training.run_checkpoints import (
    NonFiniteLossError,
    TrainingCheckpoints,
    export_pretrained,
    restore_model_weights,
)
