"""Google's original TF1 BERT checkpoints (`bert_model.ckpt.*`): load, save, release folders.

`from_checkpoint` and `from_google_checkpoint` (`keras_bert_lite.models`)
build a model from a release folder with these functions.

Example:

    >>> pretrainer = BertPretrainer(BertEncoder(BertConfig.from_json_file("bert_config.json")))
    >>> report = load_google_checkpoint(pretrainer, "uncased_L-12_H-768_A-12/bert_model.ckpt")
    >>> save_google_checkpoint(pretrainer, "out/bert_model.ckpt", "uncased_L-12_H-768_A-12/vocab.txt")
"""

from __future__ import annotations

import json
import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert_lite.atomic import atomic_write
from keras_bert_lite.interop.mapping import weight_specs
from keras_bert_lite.interop.release import (
    VOCAB_NAME,
    VocabularySource,
    lower_case_for_folder,
    model_config,
    publishing,
    resolve_vocabulary,
)
from keras_bert_lite.interop.report import LoadReport, restore_weights

CONFIG_NAME = "bert_config.json"
# The files SaveV2 writes from one device: the data shard, then the index that makes the
# checkpoint visible (the order they are published in).
BUNDLE_SUFFIXES = (".data-00000-of-00001", ".index")

# Errors the checkpoint reader raises for unreadable (truncated, corrupt) files.
_READ_ERRORS = (tf.errors.OpError, IndexError, ValueError, RuntimeError)


def resolve_checkpoint_prefix(path: str | os.PathLike) -> str:
    """Returns the checkpoint prefix (`.../bert_model.ckpt`) for a prefix, file or directory.

    Args:
        path: a prefix; its `.index` or `.data-*` file; or a directory holding a `checkpoint`
            state file or exactly one `*.index` file (a Google release folder).

    Raises:
        FileNotFoundError: naming the path when no checkpoint is there.
        ValueError: when a directory holds several checkpoints.
    """
    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest:
            return latest
        indexes = sorted(tf.io.gfile.glob(os.path.join(path, "*.index")))
        if not indexes:
            raise FileNotFoundError(f"No TF checkpoint in directory {path} (expected e.g. bert_model.ckpt.index).")
        if len(indexes) > 1:
            raise ValueError(f"Several checkpoints in directory {path}: {indexes}; pass the prefix of one.")
        return indexes[0].removesuffix(".index")
    path = path.removesuffix(".index")
    if ".data-" in os.path.basename(path):
        path = path[: path.rindex(".data-")]
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"TF checkpoint not found: {path}.index does not exist.")
    return path


def load_google_checkpoint(model: keras.Model, ckpt_path: str | os.PathLike, strict: bool = True) -> LoadReport:
    """Loads an original TF1 BERT checkpoint into a `BertEncoder` or `BertPretrainer`.

    Variables are read by their original names (`bert/embeddings/word_embeddings`,
    `bert/encoder/layer_N/...`, `bert/pooler/dense/...`, and for a pretrainer
    `cls/predictions/...` and `cls/seq_relationship/...`). Optimizer slots (`*/adam_m`,
    `*/adam_v`) and `global_step` are skipped. A checkpoint whose position or segment table has
    more rows than the model's config uses (e.g. 512 positions into a 128-position model) loads
    its first rows; the report lists these under `sliced`.

    Args:
        model: a built `BertEncoder` or `BertPretrainer`.
        ckpt_path: checkpoint prefix (`.../bert_model.ckpt`), one of its files, or its directory.
        strict: when True (default), any missing, unexpected or shape-mismatched variable raises
            `CheckpointMismatchError` naming them and nothing is assigned. When False, every
            variable that fits is loaded and the rest is only reported (partial loads, e.g. an
            encoder from a pre-training checkpoint: the `cls/*` heads are then `unexpected`).

    Returns:
        A `LoadReport`: loaded, missing, unexpected, mismatched and sliced variable names.

    Raises:
        FileNotFoundError: no checkpoint at `ckpt_path`.
        ValueError: the checkpoint cannot be read (truncated or corrupt), naming the file.
        CheckpointMismatchError: (a ValueError) in strict mode, when the checkpoint does not fit.
    """
    prefix = resolve_checkpoint_prefix(ckpt_path)
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = {  # without the optimizer state, never part of the model: Adam slots and the step counter
            name: tuple(shape)
            for name, shape in reader.get_variable_to_shape_map().items()
            if name != "global_step" and not name.endswith(("/adam_m", "/adam_v"))
        }
    except _READ_ERRORS as e:
        raise ValueError(f"Cannot read TF checkpoint {prefix} (truncated or corrupt?): {e}") from None

    def read(name: str) -> np.ndarray:
        try:
            return reader.get_tensor(name)
        except _READ_ERRORS as e:
            raise ValueError(
                f"Cannot read variable {name} from TF checkpoint {prefix} (truncated or corrupt?): {e}"
            ) from None

    return restore_weights(weight_specs(model, "google"), shapes, read, strict=strict, source=prefix)


def save_google_checkpoint(
    model: keras.Model,
    path: str | os.PathLike,
    vocabulary: VocabularySource | None = None,
    *,
    lower_case: bool | None = None,
    approximate_gelu: bool = False,
) -> str:
    """Writes a Google release folder: the TF1 checkpoint, `bert_config.json` and `vocab.txt`.

    The checkpoint files (`{path}.index`, `{path}.data-00000-of-00001`) hold exactly the original
    variable names, shapes and float32 values; `bert_config.json` (next to them) holds only
    Google's keys, with values the original code computes the same function with. So
    `from_google_checkpoint(folder)` and Google's own `modeling.py` + `tokenization.py` (e.g.
    `run_classifier.py --init_checkpoint=... --bert_config_file=... --vocab_file=...`) both load
    the folder. Every file is written under a temporary name and renamed into place, the config
    last, so an interrupted save leaves the previous files, never half of them.

    Google's folders record the casing only in their name (`uncased_L-12_H-768_A-12`);
    `from_google_checkpoint` reads it from there, or else from the vocabulary. A warning is
    logged when that would contradict `lower_case`.

    Args:
        model: a `BertEncoder` (writes `bert/*`) or `BertPretrainer` (also `cls/*`).
        path: the checkpoint prefix, e.g. `out/bert_model.ckpt`; parent folders are created.
        vocabulary: the `vocab.txt` to write: a path, a list of tokens, a `BertTokenizer` or a
            `BertPreprocessor`. Without one the folder has no vocabulary (a warning says so).
        lower_case: the casing (None: the tokenizer's, or inferred from the tokens).
        approximate_gelu: the original code has only the tanh GELU; True writes a model with the
            exact erf GELU ("gelu_exact", as converted from Hugging Face) as "gelu", which changes
            its outputs slightly (docs/interop.md). False refuses such a model.

    Returns:
        The prefix written.

    Raises:
        TypeError: `model` is not a `BertEncoder` or `BertPretrainer`.
        ValueError: before anything is written, when the config cannot be expressed for the
            original code (see `BertConfig.to_google_dict`) or the vocabulary does not fit.
    """
    path = os.fspath(path)
    specs = weight_specs(model, "google")
    config = model_config(model)
    google_config = config.to_google_dict(approximate_gelu=approximate_gelu)
    directory = os.path.dirname(path)
    files = {}
    if vocabulary is None:
        if not tf.io.gfile.exists(os.path.join(directory, VOCAB_NAME)):
            logging.warning("No vocabulary given: %s has no %s, so it does not load on its own.", directory, VOCAB_NAME)
    else:
        vocab = resolve_vocabulary(vocabulary, config, lower_case)
        if vocab.lower_case != lower_case_for_folder(directory, vocab.tokens):
            logging.warning(
                "The vocabulary (%s) is %s, but from_google_checkpoint will read this folder as %s (from its "
                "name or vocabulary): load it with lower_case=%s, or name the folder cased_* / uncased_*.",
                vocab.source, "uncased" if vocab.lower_case else "cased",
                "cased" if vocab.lower_case else "uncased", vocab.lower_case,
            )
        files[VOCAB_NAME] = vocab.text
    files[CONFIG_NAME] = json.dumps(google_config, indent=2, sort_keys=True) + "\n"
    values = [keras.ops.convert_to_numpy(spec.variable) for spec in specs]
    tensors = [tf.constant(value.T if spec.transpose else value) for spec, value in zip(specs, values)]
    with publishing(directory, files), atomic_write(path, suffixes=BUNDLE_SUFFIXES) as (temporary,):
        tf.raw_ops.SaveV2(
            prefix=temporary,
            tensor_names=[spec.name for spec in specs],
            shape_and_slices=[""] * len(specs),
            tensors=tensors,
        )
    logging.info("Wrote %s.{index,data-00000-of-00001} and %s in %s", os.path.basename(path), ", ".join(files),
                 directory or ".")
    return path
