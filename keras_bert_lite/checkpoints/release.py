"""Pieces shared by the `from_*_checkpoint` helpers: the model to build and its preprocessor."""

from __future__ import annotations

import os

import keras
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models import BertEncoder, BertPretrainer
from keras_bert_lite.text.preprocessor import BertPreprocessor

MODEL_KINDS = ("encoder", "pretrainer")


def build_model(config: BertConfig, kind: str) -> keras.Model:
    """A fresh `BertEncoder` ("encoder") or `BertPretrainer` ("pretrainer") for `config`."""
    if kind not in MODEL_KINDS:
        raise ValueError(f"model must be one of {MODEL_KINDS}, got {kind!r}.")
    encoder = BertEncoder(config)
    return BertPretrainer(encoder) if kind == "pretrainer" else encoder


def lower_case_from_name(directory: str) -> bool:
    """Google's naming: `cased_*` and `multi_cased_*` keep case; `uncased_*` and the rest don't."""
    name = os.path.basename(os.path.normpath(directory)).lower()
    return not ("cased" in name and "uncased" not in name)


def make_preprocessor(vocab_file: str, config: BertConfig, seq_length: int, lower_case: bool) -> BertPreprocessor:
    """A `BertPreprocessor` for `vocab_file`, checked against the model's config.

    Raises:
        FileNotFoundError: `vocab_file` does not exist.
        ValueError: `seq_length` exceeds `config.max_position_embeddings`, or the vocabulary has
            more tokens than `config.vocab_size` (its ids would fall outside the embedding table).
    """
    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"Vocabulary file not found: {vocab_file}")
    if not 2 < seq_length <= config.max_position_embeddings:
        raise ValueError(
            f"seq_length must be in [3, max_position_embeddings={config.max_position_embeddings}], "
            f"got {seq_length}."
        )
    preprocessor = BertPreprocessor(vocab_file, seq_length=seq_length, lower_case=lower_case)
    if preprocessor.tokenizer.vocab_size > config.vocab_size:
        raise ValueError(
            f"{vocab_file} has {preprocessor.tokenizer.vocab_size} tokens but the model's vocab_size is "
            f"{config.vocab_size}."
        )
    return preprocessor
