"""BERT's building blocks as serializable Keras 3 layers."""

from keras_bert_lite.layers.embeddings import BertEmbeddings
from keras_bert_lite.layers.heads import (
    BertPooler,
    ClassificationHead,
    MaskedLMHead,
    NextSentenceHead,
    SpanHead,
)
from keras_bert_lite.layers.pooling import SentencePooling
from keras_bert_lite.layers.transformer import TransformerEncoderBlock
