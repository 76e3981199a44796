"""`SentencePooling`: token vectors to one vector per text, as sentence-transformers' `Pooling`."""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import ops

from keras_bert_lite.layers.base import ConfigLayer

# sentence-transformers' modes.
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class SentencePooling(ConfigLayer):
    """Pools the encoder's token vectors over the real (unmasked) tokens of each text.

    The modes compute what sentence-transformers' `Pooling` computes on right-padded inputs:
    "cls" the first token's vector; "max" the element-wise maximum over real tokens; "mean" their
    mean (the sum over max(count, 1e-9)); "mean_sqrt_len_tokens" the sum over sqrt(count);
    "weightedmean" the mean weighted by position (1, 2, ...); "lasttoken" the last real token's
    vector. Several modes are concatenated in the order given, as sentence-transformers does.

    Args:
        modes: one mode name or a sequence of them (each at most once), from `POOLING_MODES`.

    Call args:
        sequence_output: float [batch, seq, H], the encoder's last layer.
        input_mask: int [batch, seq], 1 for real tokens, 0 for padding (right-padded).

    Returns:
        float32 [batch, len(modes) * H]: pooled in float32 whatever the compute dtype, so that
        mixed-precision models average in full precision.

    Example:

        >>> SentencePooling("mean")(ops.ones((2, 5, 8)), ops.ones((2, 5), "int32")).shape
        (2, 8)
    """

    _CONFIG_ARGS = ("modes",)

    def __init__(self, modes: str | Sequence[str] = "mean", **kwargs):
        super().__init__(**kwargs)
        modes = (modes,) if isinstance(modes, str) else tuple(modes)
        unknown = [mode for mode in modes if mode not in POOLING_MODES]
        if unknown or not modes or len(set(modes)) != len(modes):
            raise ValueError(f"SentencePooling: modes must name some of {POOLING_MODES} once each, got {list(modes)}.")
        self.modes = modes

    def call(self, sequence_output, input_mask):
        tokens = ops.cast(sequence_output, "float32")
        mask = ops.cast(input_mask, "float32")[:, :, None]  # [batch, seq, 1]
        count = ops.sum(mask, axis=1)
        pooled = []
        for mode in self.modes:
            if mode == "cls":
                pooled.append(tokens[:, 0])
            elif mode == "max":
                pooled.append(ops.max(ops.where(mask > 0, tokens, float("-inf")), axis=1))
            elif mode == "mean":
                pooled.append(ops.sum(tokens * mask, axis=1) / ops.maximum(count, 1e-9))
            elif mode == "mean_sqrt_len_tokens":
                pooled.append(ops.sum(tokens * mask, axis=1) / ops.sqrt(ops.maximum(count, 1e-9)))
            elif mode == "weightedmean":
                weights = mask * ops.cast(ops.arange(1, ops.shape(tokens)[1] + 1), "float32")[None, :, None]
                pooled.append(ops.sum(tokens * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1e-9))
            else:  # lasttoken
                last = ops.maximum(ops.cast(ops.sum(input_mask, axis=1), "int32") - 1, 0)
                pooled.append(ops.take_along_axis(tokens, last[:, None, None], axis=1)[:, 0])
        return pooled[0] if len(pooled) == 1 else ops.concatenate(pooled, axis=-1)

    def compute_output_shape(self, sequence_output_shape, input_mask_shape=None):
        hidden = sequence_output_shape[-1]
        return (sequence_output_shape[0], None if hidden is None else len(self.modes) * hidden)

    def compute_output_spec(self, sequence_output, input_mask):
        return keras.KerasTensor(self.compute_output_shape(sequence_output.shape), "float32")
