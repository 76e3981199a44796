"""The former name of `keras_bert_lite.interop` (Google and Hugging Face checkpoints), kept so that
`from keras_bert_lite.checkpoints import load_hf_checkpoint` and the like keep working.

Run checkpoints (save, resume after a kill) are `keras_bert_lite.training.run_checkpoints`.
"""

from keras_bert_lite.interop import *  # noqa: F401,F403
from keras_bert_lite.interop import __all__  # noqa: F401
