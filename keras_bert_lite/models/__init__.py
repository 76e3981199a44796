"""Functional BERT models built from `keras_bert_lite.layers`."""

from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert_lite.models.feature_extractor import BertFeatureExtractor
from keras_bert_lite.models.pretrainer import BertPretrainer, pretraining_losses
from keras_bert_lite.models.span_labeler import BertSpanLabeler, span_loss
from keras_bert_lite.models.token_classifier import BertTokenClassifier

__all__ = [
    "INPUT_NAMES",
    "BertClassifier",
    "BertEncoder",
    "BertFeatureExtractor",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "pretraining_losses",
    "span_loss",
]
