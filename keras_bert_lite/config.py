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
import os
from typing import Any

# Activation names understood by the layers. "gelu" is the tanh approximation used by the
# original BERT code (and Google's configs); "gelu_exact" is the erf form (Hugging Face's "gelu").
ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "silu")

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

# Keys of Google's bert_config.json, all of which map 1:1 onto fields below.
GOOGLE_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
)


def read_json_file(path: str | os.PathLike, description: str) -> Any:
    """Parses a JSON file; a missing file or bad JSON is an error naming `description`, the path
    and the line."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{description} not found: {path}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON (line {e.lineno}): {e.msg}") from None


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyper-parameters of a BERT encoder, named as in Google's `bert_config.json`.

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
        ValueError: naming the field, when a size is not positive, `hidden_size` is not divisible
            by `num_attention_heads`, a probability is outside [0, 1) or the activation is unknown.
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
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {value!r}.")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})."
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(
                f"BertConfig.hidden_act {self.hidden_act!r} is unknown; expected one of {ACTIVATIONS}."
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"BertConfig.{name} must be in [0, 1), got {value!r}.")
        for name in ("initializer_range", "layer_norm_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"BertConfig.{name} must be positive, got {getattr(self, name)!r}.")

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
        layers, hidden, heads, intermediate = _PRESET_SIZES[name]
        fields = dict(
            num_hidden_layers=layers,
            hidden_size=hidden,
            num_attention_heads=heads,
            intermediate_size=intermediate,
        )
        fields.update(overrides)
        return cls(**fields)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> BertConfig:
        """Builds a config from a dict with Google's keys; unknown keys raise ValueError."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"Unknown BertConfig field(s) {unknown}; expected a subset of {sorted(known)}.")
        return cls(**values)

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> BertConfig:
        """Reads Google's `bert_config.json` (extra keys such as `directionality` are ignored)."""
        values = read_json_file(path, "BERT config file")
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

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Writes the config as Google's `bert_config.json`."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")
