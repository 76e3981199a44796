"""Google's original TF1 checkpoints, Hugging Face BERT folders and KerasHub BERT presets: configs,
named weights, vocabularies, read and written. No model class is imported here (see `mapping`), so that the
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
from keras_bert_lite.interop.keras_hub import (
    load_keras_hub_preset,
    read_keras_hub_config,
    read_keras_hub_tokenizer,
    save_keras_hub_preset,
)
from keras_bert_lite.interop.report import CheckpointMismatchError, LoadReport
