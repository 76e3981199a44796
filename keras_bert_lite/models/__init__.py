"""Functional BERT models built from `keras_bert_lite.layers`, and their raw-text and file helpers
(the checkpoint-folder loaders: `keras_bert_lite.models.checkpoint_folder`)."""

from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.feature_extractor import BertFeatureExtractor
from keras_bert_lite.models.losses import multiple_negatives_ranking_loss, span_loss
from keras_bert_lite.models.masked_lm import BertMaskedLM
from keras_bert_lite.models.pretrainer import BertPretrainer, pretraining_losses
from keras_bert_lite.models.rebuild import save_model
from keras_bert_lite.models.sentence_encoder import BertSentenceEncoder
from keras_bert_lite.models.span_labeler import BertSpanLabeler
from keras_bert_lite.models.text_inputs import text_dataset
from keras_bert_lite.models.token_classifier import BertTokenClassifier
