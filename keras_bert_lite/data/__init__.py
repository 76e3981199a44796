"""Data: corpora, pre-training TFRecords in the original format, and fine-tuning task formats."""

from keras_bert_lite.data.classification_dataset import classification_dataset
from keras_bert_lite.data.conll import CONLL2003_TAGS, read_conll
from keras_bert_lite.data.corpora import builtin_documents, read_documents, tfds_documents
from keras_bert_lite.data.entity_metrics import entity_f1
from keras_bert_lite.data.glue_metrics import glue_metrics
from keras_bert_lite.data.glue_reader import ClassificationData, read_glue_tsv
from keras_bert_lite.data.glue_tasks import GLUE_TASKS, get_glue_task
from keras_bert_lite.data.ner_inputs import ner_dataset
from keras_bert_lite.data.pretraining_files import check_pretraining_files
from keras_bert_lite.data.pretraining_format import pretraining_feature_spec
from keras_bert_lite.data.pretraining_reader import pretraining_dataset
from keras_bert_lite.data.pretraining_writer import PretrainingDataStats, create_pretraining_data
from keras_bert_lite.data.squad import (
    predict_answers,
    read_squad,
    squad_dataset,
    squad_evaluate,
    squad_features,
)
from keras_bert_lite.data.tfds_tasks import load_conll_from_tfds, load_glue_from_tfds, load_squad_from_tfds

__all__ = [
    "CONLL2003_TAGS",
    "GLUE_TASKS",
    "ClassificationData",
    "PretrainingDataStats",
    "builtin_documents",
    "check_pretraining_files",
    "classification_dataset",
    "create_pretraining_data",
    "entity_f1",
    "get_glue_task",
    "glue_metrics",
    "load_conll_from_tfds",
    "load_glue_from_tfds",
    "load_squad_from_tfds",
    "ner_dataset",
    "predict_answers",
    "pretraining_dataset",
    "pretraining_feature_spec",
    "read_conll",
    "read_documents",
    "read_glue_tsv",
    "read_squad",
    "squad_dataset",
    "squad_evaluate",
    "squad_features",
    "tfds_documents",
]
