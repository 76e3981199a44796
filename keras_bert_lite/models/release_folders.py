"""A Google or Hugging Face release folder as a `BertEncoder`, or as a `BertPretrainer` with the
checkpoint's pre-training heads (to continue pre-training). This module sits above the
pre-trainer; `checkpoint_folder`, which the task models' `from_checkpoint` use, sits below it.

Example:

    >>> encoder, preprocessor = from_hf_checkpoint("all-MiniLM-L6-v2", seq_length=128)
    >>> pretrainer, preprocessor = from_google_checkpoint("uncased_L-12_H-768_A-12", model="pretrainer")
"""

from __future__ import annotations

import os
from collections.abc import Callable

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.checkpoint_folder import load_folder
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.pretrainer import BertPretrainer
from keras_bert_lite.text.preprocessor import BertPreprocessor

MODEL_KINDS = ("encoder", "pretrainer")


def model_builder(kind: str) -> Callable[[BertConfig], BertEncoder | BertPretrainer]:
    """What builds a fresh `BertEncoder` ("encoder") or `BertPretrainer` ("pretrainer") from a config."""
    if kind not in MODEL_KINDS:
        raise ValueError(f"model must be one of {MODEL_KINDS}, got {kind!r}.")
    return BertEncoder if kind == "encoder" else lambda config: BertPretrainer(BertEncoder(config))


def from_google_checkpoint(
    directory: str | os.PathLike, model: str = "encoder", seq_length: int = 128, lower_case: bool | None = None
) -> tuple[BertEncoder | BertPretrainer, BertPreprocessor]:
    """Builds a model and its preprocessor from a Google BERT release folder.

    The folder holds `bert_config.json`, `vocab.txt` and `bert_model.ckpt.*` (as in
    `uncased_L-12_H-768_A-12/` or the Small BERTs `uncased_L-4_H-256_A-4/`), local or on any
    `tf.io.gfile` path.

    Args:
        directory: the release folder.
        model: "encoder" (a `BertEncoder`; the checkpoint's pre-training heads are ignored) or
            "pretrainer" (a `BertPretrainer`; the checkpoint must hold the `cls/*` heads).
        seq_length: the preprocessor's packed length (at most `max_position_embeddings`).
        lower_case: whether the vocabulary is uncased; None infers it from the folder name as
            Google's releases are named (`uncased_*` True; `cased_*`, `multi_cased_*` False), and
            for other names from the vocabulary (cased if a token has an upper-case letter).

    Returns:
        (model, preprocessor): the loaded model and a `BertPreprocessor` for its vocabulary.

    Raises:
        FileNotFoundError: naming a missing file.
        ValueError: naming the file, for an invalid `bert_config.json`, `vocab.txt` or checkpoint.
        CheckpointMismatchError: (a ValueError) when the checkpoint does not fit `bert_config.json`
            (anything other than unused heads for an encoder).
    """
    return load_folder("google", os.fspath(directory), seq_length, lower_case, build=model_builder(model))


def from_hf_checkpoint(
    directory: str | os.PathLike, model: str = "encoder", seq_length: int = 128, lower_case: bool | None = None
) -> tuple[BertEncoder | BertPretrainer, BertPreprocessor]:
    """As `from_google_checkpoint`, from a Hugging Face BERT folder: `config.json`,
    `model.safetensors` (or `pytorch_model.bin`) and `vocab.txt`; the heads are `cls.*`, and
    `lower_case` None reads `do_lower_case` from `tokenizer_config.json` (default True)."""
    return load_folder("hugging_face", os.fspath(directory), seq_length, lower_case, build=model_builder(model))
