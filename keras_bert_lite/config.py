"""`BertConfig`: model hyper-parameters, presets and Google's `bert_config.json`.

Example:

    >>> config = BertConfig.preset("tiny")
    >>> config.hidden_size, config.num_hidden_layers
    (128, 2)
    >>> BertConfig.from_dict(config.to_dict()) == config
    True
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from keras_bert_lite.atomic import write_text_atomically

# Activation names understood by the layers. "gelu" is the tanh approximation used by the
# original BERT code (and Google's configs); "gelu_exact" is the erf form (Hugging Face's "gelu").
ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "silu")

# What Google's original modeling.py can express: its `get_activation` knows gelu (the tanh
# form), relu and tanh (and "linear", which no BERT uses), and its layer norm
# (tf.contrib.layers.layer_norm) has a fixed epsilon with no config key.
GOOGLE_ACTIVATIONS = ("gelu", "relu", "tanh")
GOOGLE_LAYER_NORM_EPS = 1e-12

# Small BERTs (Turc et al. 2019) use A = H / 64 and I = 4H.
_PRESET_SIZES = {
    "tiny": (2, 128, 2, 512),
    "mini": (4, 256, 4, 1024),
    "small": (4, 512, 8, 2048),
    "medium": (8, 512, 8, 2048),
    "base": (12, 768, 12, 3072),
    "large": (24, 1024, 16, 4096),
}
PRESETS = tuple(_PRESET_SIZES)

# Token, position and segment ids are int32 tensors, so no size may exceed int32.
MAX_SIZE = 2**31 - 1


def read_bytes(path: str | os.PathLike, description: str) -> tuple[str, bytes]:
    """(`path` as a string, the bytes of the file there, local or `tf.io.gfile`).

    Raises:
        FileNotFoundError: "<description> not found: <path>".
    """
    path = os.fspath(path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{description} not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        return path, f.read()


def read_json_file(path: str | os.PathLike, description: str) -> Any:
    """Parses a UTF-8 JSON file (local or `tf.io.gfile`); every failure is one error naming the file.

    A UTF-8 byte-order mark is accepted (editors on Windows write one).

    Raises:
        FileNotFoundError: naming `description` and the path.
        ValueError: naming the path, for a folder, text that is not UTF-8 (e.g. UTF-16), JSON
            that does not parse (with the line) or that is nested too deeply to parse.
    """
    if tf.io.gfile.isdir(path):
        raise ValueError(f"{description} {os.fspath(path)} is a folder; expected a JSON file.")
    path, data = read_bytes(path, description)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        utf16 = " (it looks like UTF-16)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ValueError(f"{path}: not UTF-8 text{utf16} at byte {e.start}; save it as UTF-8.") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON (line {e.lineno}): {e.msg}") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply to be a config file.") from None


def _describe(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyper-parameters of a BERT encoder, named as in Google's `bert_config.json`.

    Values are checked on construction, so a config that exists can build a model: sizes are
    Python (or NumPy) integers, probabilities and scales finite numbers. Integers given for the
    float fields are stored as floats, NumPy scalars as Python numbers, so configs compare and
    serialize the same way whatever built them.

    Args:
        vocab_size: number of WordPiece tokens (rows of the word-embedding table).
        hidden_size: H, width of every hidden state.
        num_hidden_layers: L, number of transformer encoder blocks.
        num_attention_heads: A, heads per self-attention layer; must divide `hidden_size`.
        intermediate_size: I, width of the feed-forward layer (4H in the paper).
        hidden_act: one of `ACTIVATIONS`; "gelu" is BERT's tanh approximation.
        hidden_dropout_prob: dropout on embeddings and on each residual branch.
        attention_probs_dropout_prob: dropout on the attention probabilities.
        max_position_embeddings: rows of the learned position table (longest sequence).
        type_vocab_size: number of segment ids (2 for sentence pairs).
        initializer_range: stddev of the truncated-normal weight initializer.
        layer_norm_eps: LayerNormalization epsilon (1e-12 in BERT).

    Raises:
        ValueError: naming the field, when a size is not an integer in [1, 2**31 - 1] (booleans
            and floats are refused), `hidden_size` is not divisible by `num_attention_heads`, a
            probability is not a number in [0, 1), a scale is not a finite positive number, or
            the activation is unknown.

    Example:

        >>> BertConfig(hidden_size=256, num_attention_heads=4).head_size
        64
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12

    def __post_init__(self) -> None:
        for name in SIZE_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 < value <= MAX_SIZE:
                raise ValueError(f"BertConfig.{name} must be an integer in [1, {MAX_SIZE}], got {_describe(value)}.")
            object.__setattr__(self, name, int(value))
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"BertConfig.{name} must be a finite number, got {_describe(value)}.")
            value = float(value)
            object.__setattr__(self, name, value)
            # Dropout rates are probabilities (a rate of 1 drops everything); scales are positive.
            probability = name.endswith("_prob")
            if not (0.0 <= value < 1.0 if probability else value > 0):
                raise ValueError(f"BertConfig.{name} must be {'in [0, 1)' if probability else 'positive'}, got {value!r}.")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})."
            )
        if not isinstance(self.hidden_act, str) or self.hidden_act not in ACTIVATIONS:
            raise ValueError(
                f"BertConfig.hidden_act {self.hidden_act!r} is unknown; expected one of {ACTIVATIONS}."
            )

    @property
    def head_size(self) -> int:
        """Width of one attention head, H / A."""
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> BertConfig:
        """Returns a named preset: tiny, mini, small, medium, base or large.

        Keyword overrides replace single fields, e.g. `BertConfig.preset("tiny", vocab_size=8000)`.
        """
        if name not in _PRESET_SIZES:
            raise ValueError(f"Unknown BertConfig preset {name!r}; expected one of {PRESETS}.")
        sizes = dict(zip(("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size"),
                         _PRESET_SIZES[name]))
        return cls(**{**sizes, **overrides})

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> BertConfig:
        """Builds a config from a dict with Google's keys (missing keys take the defaults).

        Raises:
            ValueError: `values` is not a dict, has unknown keys, or a value is invalid (naming it).
        """
        if not isinstance(values, Mapping):
            raise ValueError(f"A BertConfig is built from a dict of fields, got {type(values).__name__}.")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(str(k) for k in set(values) - known)
        if unknown:
            raise ValueError(f"Unknown BertConfig field(s) {unknown}; expected a subset of {sorted(known)}.")
        return cls(**values)

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> BertConfig:
        """Reads Google's `bert_config.json` (extra keys such as `directionality` are ignored).

        Raises:
            FileNotFoundError: no file at `path`.
            ValueError: naming the file (and the field): unreadable JSON, not a JSON object, a
                missing Google key, or an invalid value.
        """
        values = read_json_file(path, "BERT config file")
        if not isinstance(values, dict):
            raise ValueError(f"{path}: expected a JSON object of config fields, got {type(values).__name__}.")
        known = {f.name for f in dataclasses.fields(cls)}
        missing = [k for k in GOOGLE_KEYS if k not in values]
        if missing:
            raise ValueError(f"{path}: missing field(s) {missing}.")
        try:
            return cls.from_dict({k: v for k, v in values.items() if k in known})
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """All fields as a JSON-friendly dict (Google's keys plus `layer_norm_eps`)."""
        return dataclasses.asdict(self)

    def to_google_dict(self, approximate_gelu: bool = False) -> dict[str, Any]:
        """Google's keys only, with values the original `modeling.py` computes the same function with.

        The original code reads any key but uses only `GOOGLE_KEYS`; its layer norm has a fixed
        epsilon and it knows fewer activations. A config it would silently run as a different
        function is refused instead, naming the field.

        Args:
            approximate_gelu: write "gelu_exact" (the erf GELU of Hugging Face models) as the
                original's "gelu", its tanh approximation: the closest function it has, but not
                the same one, so outputs change slightly.

        Raises:
            ValueError: `hidden_act` has no equivalent in the original code (or is "gelu_exact"
                without `approximate_gelu`), or `layer_norm_eps` is not 1e-12.
        """
        values = {key: getattr(self, key) for key in GOOGLE_KEYS}
        if self.hidden_act == "gelu_exact" and approximate_gelu:
            values["hidden_act"] = "gelu"
        elif self.hidden_act not in GOOGLE_ACTIVATIONS:
            closest = (
                " Pass approximate_gelu=True to write its tanh approximation, the original's 'gelu' "
                "(outputs change slightly; see docs/interop.md)."
                if self.hidden_act == "gelu_exact" else ""
            )
            raise ValueError(
                f"BertConfig.hidden_act {self.hidden_act!r} cannot be expressed in Google's bert_config.json: "
                f"the original modeling.py knows only {GOOGLE_ACTIVATIONS}.{closest}"
            )
        if self.layer_norm_eps != GOOGLE_LAYER_NORM_EPS:
            raise ValueError(
                f"BertConfig.layer_norm_eps {self.layer_norm_eps!r} cannot be expressed in Google's "
                f"bert_config.json: the original modeling.py always uses {GOOGLE_LAYER_NORM_EPS}."
            )
        return values

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Writes every field (Google's keys plus `layer_norm_eps`) as JSON, atomically.

        `from_json_file` reads it back exactly. For a file that Google's original code reads as the
        same model, write `to_google_dict()` (as `save_google_checkpoint` does).
        """
        write_text_atomically(path, json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")


# Keys of Google's bert_config.json: every field but `layer_norm_eps`, which it cannot express.
GOOGLE_KEYS = tuple(f.name for f in dataclasses.fields(BertConfig) if f.name != "layer_norm_eps")
SIZE_FIELDS = tuple(f.name for f in dataclasses.fields(BertConfig) if f.type == "int")
