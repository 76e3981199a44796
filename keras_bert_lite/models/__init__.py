"""Functional BERT models built from `keras_bert_lite.layers`, and their raw-text and file helpers.

The checkpoint-folder loader (`keras_bert_lite.models.checkpoint_folder`) is imported from its
module: the checkpoint readers build these models, so they import this package first.
"""

from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert_lite.models.feature_extractor import BertFeatureExtractor
from keras_bert_lite.models.losses import span_loss
from keras_bert_lite.models.pretrainer import BertPretrainer, pretraining_losses
from keras_bert_lite.models.saving import save_model
from keras_bert_lite.models.span_labeler import BertSpanLabeler
from keras_bert_lite.models.text_inputs import holds_text, text_dataset
from keras_bert_lite.models.token_classifier import BertTokenClassifier

__all__ = [
    "INPUT_NAMES",
    "BertClassifier",
    "BertEncoder",
    "BertFeatureExtractor",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "holds_text",
    "pretraining_losses",
    "save_model",
    "span_loss",
    "text_dataset",
]
