"""Data: corpora, and one subpackage per format: `pretraining` (the original TFRecords), `glue`, `ner`,
`squad`."""

from keras_bert_lite.data.corpora import builtin_documents, read_documents, tfds_documents
from keras_bert_lite.data.glue import (
    GLUE_TASKS,
    ClassificationData,
    classification_dataset,
    get_glue_task,
    glue_metrics,
    read_classification_file,
    read_glue_tsv,
)
from keras_bert_lite.data.ner import CONLL2003_TAGS, entity_f1, ner_dataset, read_conll
from keras_bert_lite.data.pretraining import (
    PretrainingDataStats,
    check_pretraining_files,
    create_pretraining_data,
    pretraining_dataset,
    pretraining_feature_spec,
)
from keras_bert_lite.data.squad import (
    predict_answers,
    read_squad,
    squad_dataset,
    squad_evaluate,
    squad_features,
)
from keras_bert_lite.data.tfds_tasks import load_conll_from_tfds, load_glue_from_tfds, load_squad_from_tfds
