"""Google's original TF1 checkpoints and Hugging Face BERT folders: configs, named weights,
vocabularies, read and written. No model class is imported here (see `mapping`), so that the
models' `from_checkpoint` may use this package."""

from keras_bert_lite.interop.google import (
    load_google_checkpoint,
    resolve_checkpoint_prefix,
    save_google_checkpoint,
)
from keras_bert_lite.interop.huggingface import (
    bert_config_from_hf,
    hf_config_from_bert,
    load_hf_checkpoint,
    read_hf_config,
    read_hf_lower_case,
    save_hf_checkpoint,
)
from keras_bert_lite.interop.report import CheckpointMismatchError, LoadReport
