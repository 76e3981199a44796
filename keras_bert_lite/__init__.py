"""keras_bert_lite: BERT on Keras 3 and TensorFlow."""

from keras_bert_lite.config import BertConfig
from keras_bert_lite.layers import (
    BertEmbeddings,
    BertPooler,
    ClassificationHead,
    MaskedLMHead,
    NextSentenceHead,
    SpanHead,
    TransformerEncoderBlock,
)
from keras_bert_lite.models import BertEncoder, BertPretrainer, pretraining_losses

__version__ = "0.1.0"
