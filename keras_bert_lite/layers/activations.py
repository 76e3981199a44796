"""Activation functions by the names used in `BertConfig.hidden_act`."""

from __future__ import annotations

from collections.abc import Callable

import keras
import tensorflow as tf


def gelu(x):
    """BERT's GELU, the tanh approximation used by the original code.

    `tf.nn.gelu` (same values as Keras' GELU) is the op sequence oneDNN fuses into the preceding
    matmul and bias add at inference, which Keras' own GELU is not.
    """
    return tf.nn.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU with the exact erf form (Hugging Face's "gelu")."""
    return tf.nn.gelu(x, approximate=False)


_ACTIVATIONS: dict[str, Callable] = {
    "gelu": gelu,
    "gelu_exact": gelu_exact,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "silu": keras.activations.silu,
}


def get_activation(name: str) -> Callable:
    """Returns the activation called `name` (see `keras_bert_lite.config.ACTIVATIONS`)."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"Unknown activation {name!r}; expected one of {tuple(_ACTIVATIONS)}.") from None
