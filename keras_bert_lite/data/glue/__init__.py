"""GLUE sentence(-pair) classification: the task definitions (`tasks`), TSV reading (`reader`),
tf.data pipelines (`dataset`) and `metrics`.

Example:

    >>> task = GLUE_TASKS["mrpc"]
    >>> train = read_glue_tsv("glue_data/MRPC/train.tsv", task)
    >>> ds = classification_dataset(train, BertPreprocessor("vocab.txt"), batch_size=32,
    ...                             is_training=True, num_classes=task.num_classes)
"""

from keras_bert_lite.data.glue.dataset import check_labels, classification_dataset
from keras_bert_lite.data.glue.metrics import f1_binary, glue_metrics, matthews_corrcoef, pearson, spearman
from keras_bert_lite.data.glue.reader import (
    ClassificationData,
    ClassificationExample,
    read_classification_file,
    read_glue_tsv,
)
from keras_bert_lite.data.glue.tasks import GLUE_TASKS, GlueTask, get_glue_task
