"""Text processing in the TensorFlow graph: WordPiece, input packing, MLM masking, vocabularies."""

from keras_bert_lite.text.masking import MaskedLMMasker, mask_tokens
from keras_bert_lite.text.normalization import normalize_text
from keras_bert_lite.text.packer import BertPackInputs
from keras_bert_lite.text.preprocessor import BertPreprocessor
from keras_bert_lite.text.tokenizer import BertTokenizer
from keras_bert_lite.text.vocab import SPECIAL_TOKENS, build_vocab, load_vocabulary
