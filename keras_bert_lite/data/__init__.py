"""Data: corpora, BERT pre-training TFRecords in the original format, and the tf.data reader."""

from keras_bert_lite.data.corpora import builtin_documents, read_documents, tfds_documents
from keras_bert_lite.data.pretraining_reader import pretraining_dataset, pretraining_feature_spec
from keras_bert_lite.data.pretraining_writer import PretrainingDataStats, create_pretraining_data

__all__ = [
    "PretrainingDataStats",
    "builtin_documents",
    "create_pretraining_data",
    "pretraining_dataset",
    "pretraining_feature_spec",
    "read_documents",
    "tfds_documents",
]
