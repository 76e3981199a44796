"""Functional BERT models built from `keras_bert_lite.layers`."""

from keras_bert_lite.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert_lite.models.pretrainer import BertPretrainer, pretraining_losses

__all__ = ["INPUT_NAMES", "BertEncoder", "BertPretrainer", "pretraining_losses"]
