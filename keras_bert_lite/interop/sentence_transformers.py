"""What a sentence-transformers model folder says about turning its BERT into sentence embeddings.

Such a folder is a Hugging Face BERT folder plus `modules.json` (the module pipeline:
Transformer, then Pooling, then optionally Normalize), the Pooling module's `config.json`, and
`sentence_bert_config.json` (the Transformer's `max_seq_length`). `read_sentence_transformers_config`
reads them as sentence-transformers 6.x does (the `pooling_mode` key, or the older
`pooling_mode_*_tokens` flags; no mode on meaning "mean").

Example:

    >>> read_sentence_transformers_config("all-MiniLM-L6-v2")
    SentenceTransformersConfig(pooling_modes=('mean',), normalize=True, max_seq_length=256, ...)
"""

from __future__ import annotations

import dataclasses
import json
import os

import tensorflow as tf

MODULES_NAME = "modules.json"
SENTENCE_BERT_CONFIG_NAME = "sentence_bert_config.json"
# What a Hub model's folder needs fetched besides the BERT files: the configs at their usual paths.
SENTENCE_TRANSFORMERS_FILES = (MODULES_NAME, SENTENCE_BERT_CONFIG_NAME, "1_Pooling/config.json",
                               "2_Normalize/config.json")
# The module types we implement, by class name (sentence-transformers has moved the classes
# between packages over versions: `sentence_transformers.models.Pooling`, `...modules.Pooling`).
SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")
# The legacy Pooling flags, in sentence-transformers' concatenation order.
LEGACY_POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}


@dataclasses.dataclass(frozen=True)
class SentenceTransformersConfig:
    """A sentence-transformers folder's pooling and limits.

    Attributes:
        pooling_modes: the Pooling module's modes, e.g. ("mean",).
        normalize: whether a Normalize module follows the pooling (unit-length embeddings).
        max_seq_length: the Transformer's token limit (special tokens included), or None when
            `sentence_bert_config.json` does not set one.
        include_prompt: the Pooling option; it only matters with prompts, which `encode` does not add.
        source: the `modules.json` read, for logs.
    """

    pooling_modes: tuple[str, ...]
    normalize: bool
    max_seq_length: int | None
    include_prompt: bool
    source: str


def read_sentence_transformers_config(directory: str | os.PathLike) -> SentenceTransformersConfig | None:
    """The sentence-transformers configuration of `directory`, or None without a `modules.json`.

    Raises:
        ValueError: naming the file and field, for a module we do not implement (e.g. a Dense
            projection), a pipeline not of the form Transformer, Pooling[, Normalize], an
            unknown pooling mode, or unreadable JSON.
        FileNotFoundError: a module's config file listed by `modules.json` is missing.
    """
    directory = os.fspath(directory)
    modules_file = os.path.join(directory, MODULES_NAME)
    if not tf.io.gfile.exists(modules_file):
        return None
    modules = _read_json(modules_file)
    if not isinstance(modules, list):
        raise ValueError(f"{modules_file}: expected a list of modules, got {type(modules).__name__}.")
    kinds = [str(module.get("type", "")).rsplit(".", 1)[-1] for module in modules]
    unsupported = [module.get("type") for module, kind in zip(modules, kinds) if kind not in SUPPORTED_MODULES]
    if unsupported:
        raise ValueError(f"{modules_file}: modules {unsupported} are not supported; BertSentenceEncoder implements "
                         f"sentence_transformers' {', '.join(SUPPORTED_MODULES)} modules only.")
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ValueError(f"{modules_file}: the modules are {kinds}; BertSentenceEncoder reads Transformer, "
                         "Pooling and an optional Normalize, in that order.")
    pooling_file = os.path.join(directory, modules[1].get("path", ""), "config.json")
    pooling = _read_json(pooling_file)
    modes = pooling.get("pooling_mode")
    if modes is None:
        modes = tuple(mode for flag, mode in LEGACY_POOLING_FLAGS.items() if pooling.get(flag)) or ("mean",)
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    valid = tuple(LEGACY_POOLING_FLAGS.values())
    if not modes or any(mode not in valid for mode in modes):
        raise ValueError(f"{pooling_file}: pooling_mode {list(modes)} is not among {valid}.")
    if len(kinds) == 3:
        normalize_file = os.path.join(directory, modules[2].get("path", ""), "config.json")
        if tf.io.gfile.exists(normalize_file):  # a Normalize of token embeddings would change the pooling
            source = _read_json(normalize_file).get("module_input_name", "sentence_embedding")
            if source != "sentence_embedding":
                raise ValueError(f"{normalize_file}: module_input_name {source!r} is not supported "
                                 "(only the pooled 'sentence_embedding' is normalized).")
    max_seq_length = None
    bert_config_file = os.path.join(directory, modules[0].get("path", ""), SENTENCE_BERT_CONFIG_NAME)
    if tf.io.gfile.exists(bert_config_file):
        max_seq_length = _read_json(bert_config_file).get("max_seq_length")
        if max_seq_length is not None and (not isinstance(max_seq_length, int) or max_seq_length < 3):
            raise ValueError(f"{bert_config_file}: max_seq_length must be an integer >= 3, got {max_seq_length!r}.")
    return SentenceTransformersConfig(modes, len(kinds) == 3, max_seq_length,
                                      bool(pooling.get("include_prompt", True)), modules_file)


def _read_json(path: str):
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{path} is missing (listed by {MODULES_NAME}).")
    try:
        with tf.io.gfile.GFile(path) as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e}") from None
