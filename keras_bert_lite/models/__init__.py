"""Functional BERT models built from `keras_bert_lite.layers`, and their raw-text and file helpers.

`find_checkpoint`, `from_checkpoint` and `CheckpointFolder` (`checkpoint_folder`) load on first
use: the checkpoint readers build these models, so they import this package first.
"""

from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert_lite.models.feature_extractor import BertFeatureExtractor
from keras_bert_lite.models.losses import span_loss
from keras_bert_lite.models.pretrainer import BertPretrainer, pretraining_losses
from keras_bert_lite.models.saving import save_model
from keras_bert_lite.models.span_labeler import BertSpanLabeler
from keras_bert_lite.models.text_inputs import is_text_input, text_dataset
from keras_bert_lite.models.token_classifier import BertTokenClassifier

_CHECKPOINT_FOLDER_NAMES = ("CheckpointFolder", "find_checkpoint", "from_checkpoint")


def __getattr__(name: str):
    if name in _CHECKPOINT_FOLDER_NAMES:
        from keras_bert_lite.models import checkpoint_folder

        return getattr(checkpoint_folder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "INPUT_NAMES",
    "BertClassifier",
    "BertEncoder",
    "BertFeatureExtractor",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "CheckpointFolder",
    "find_checkpoint",
    "from_checkpoint",
    "is_text_input",
    "pretraining_losses",
    "save_model",
    "span_loss",
    "text_dataset",
]
