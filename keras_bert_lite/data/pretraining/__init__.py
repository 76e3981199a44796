"""BERT pre-training data in Google's original TFRecord format.

One job a module: `format` (the record's features), `pairs` (next-sentence pairs from documents),
`writer` (documents -> TFRecord shards), `records` (every record of a file, checked in the graph) and
`reader` (the files checked before training, and the `tf.data` input pipeline of training).
"""

from keras_bert_lite.data.pretraining.format import pretraining_feature_spec
from keras_bert_lite.data.pretraining.reader import check_pretraining_files, pretraining_dataset
from keras_bert_lite.data.pretraining.writer import PretrainingDataStats, create_pretraining_data
