"""`TransformerEncoderBlock`: BERT's post-LayerNorm transformer encoder layer."""

from __future__ import annotations

import math

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers import accelerated, checks
from keras_bert_lite.layers.activations import get_activation
from keras_bert_lite.layers.base import ConfigLayer

# Added to the attention scores of padding keys, as in the original BERT code; exp() of it is 0 in
# float32, and the scores are float32 whatever the compute dtype.
_MASK_BIAS = -10000.0


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class TransformerEncoderBlock(ConfigLayer):
    """One BERT encoder layer (post-LN):

        x = LayerNorm(x + Dropout(Dense(SelfAttention(x, mask))))
        x = LayerNorm(x + Dropout(Dense(act(Dense(x)))))

    It computes through its Keras sub-layers (made with its dtype policy), so `Model.quantize`,
    `Dense.enable_lora` and dtype policies apply as in any Keras model; `layers.accelerated` says
    which parts it speeds up and when.

    Args:
        num_heads: A, attention heads; must divide the hidden size.
        intermediate_size: I, feed-forward width.
        activation: feed-forward activation name ("gelu" = BERT's tanh approximation).
        dropout_rate: dropout on both residual branches.
        attention_dropout_rate: dropout on the attention probabilities.
        initializer_range: stddev of the truncated-normal kernel initializer.
        layer_norm_eps: LayerNorm epsilon.
        **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`: a dtype policy such as
            "mixed_bfloat16", given to every sub-layer).

    Call args:
        x: float [batch, seq, H] hidden states.
        attention_mask: int or float [batch, seq]; 1 for real tokens, 0 for padding. Padding keys
            get no attention. None attends everywhere.
        training: bool, enables dropout.
        output_positions: optional int [batch, P], indices into seq. When given, only these
            positions are computed past the keys and values (queries, attention, feed-forward),
            which is all a caller needs when the layer is the last and only some positions are
            read (the [CLS] and masked positions in pre-training, [CLS] in classification).

    Returns:
        [batch, seq, H] in the compute dtype, or [batch, P, H] with `output_positions` (the same
        numbers as the full output gathered at those positions).

    Raises:
        ValueError / InvalidArgumentError (see `keras_bert_lite.layers.checks`): naming the
            argument, when `attention_mask` is not [batch, seq] or an output position is outside
            [0, seq).

    Sub-layers (the names checkpoint mappings use): `query`, `key`, `value`, `attention_output`,
    `attention_layer_norm`, `intermediate`, `output_dense`, `output_layer_norm` (`Dense` and
    `LayerNormalization`), and three `Dropout`s. Softmax runs in float32 under mixed precision
    and `LayerNormalization` normalizes in float32, as Keras' does.

    Example:

        >>> block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
        >>> block(ops.ones((2, 5, 8)), ops.ones((2, 5), "int32")).shape
        (2, 5, 8)
    """

    _CONFIG_ARGS = (
        "num_heads", "intermediate_size", "activation", "dropout_rate", "attention_dropout_rate",
        "initializer_range", "layer_norm_eps",
    )

    def __init__(
        self,
        num_heads: int,
        intermediate_size: int,
        activation: str = "gelu",
        dropout_rate: float = 0.1,
        attention_dropout_rate: float = 0.1,
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # Sub-layers' weights are read at their own dtype (LayerNorm's gamma stays float32 under a
        # mixed policy, as in LayerNormalization's own call); each sub-layer casts for itself.
        self.autocast = False
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self._activation_fn = get_activation(activation)
        self.attention_dropout = self._dropout(attention_dropout_rate, "attention_dropout")
        self.attention_output_dropout = self._dropout(dropout_rate, "attention_output_dropout")
        self.output_dropout = self._dropout(dropout_rate, "output_dropout")
        self.attention_layer_norm = self._layer_norm("attention_layer_norm")
        self.output_layer_norm = self._layer_norm("output_layer_norm")

    def build(self, x_shape, attention_mask_shape=None, output_positions_shape=None):
        hidden_size = x_shape[-1]
        if hidden_size % self.num_heads:
            raise ValueError(
                f"TransformerEncoderBlock: hidden size {hidden_size} is not divisible by "
                f"num_heads {self.num_heads}."
            )
        self.head_size = hidden_size // self.num_heads
        self.query = self._dense(hidden_size, "query")
        self.key = self._dense(hidden_size, "key")
        self.value = self._dense(hidden_size, "value")
        self.attention_output = self._dense(hidden_size, "attention_output")
        self.intermediate = self._dense(self.intermediate_size, "intermediate")
        self.output_dense = self._dense(hidden_size, "output_dense")
        hidden_shape = (None, hidden_size)
        for layer in (self.query, self.key, self.value, self.attention_output, self.intermediate):
            layer.build(hidden_shape)
        self.output_dense.build((None, self.intermediate_size))
        self.attention_layer_norm.build(hidden_shape)
        self.output_layer_norm.build(hidden_shape)

    def _split_heads(self, x, batch, length):
        """[batch * length, H] -> [batch, heads, length, head_size]."""
        return ops.transpose(ops.reshape(x, (batch, length, self.num_heads, self.head_size)), (0, 2, 1, 3))

    def _attention(self, q, k, v, attention_mask, training):
        """q [batch, heads, queries, head_size], k and v [batch, heads, seq, head_size]
        -> context [batch * queries, H]."""
        scores = ops.cast(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), "float32")
        if attention_mask is not None:
            keep = ops.cast(attention_mask, "float32")[:, None, None, :]
            scores = scores + (1.0 - keep) * _MASK_BIAS
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = accelerated.dropout(self.attention_dropout, probs, training)
        context = ops.transpose(ops.matmul(probs, v), (0, 2, 1, 3))  # [batch, queries, heads, size]
        batch, queries = ops.shape(q)[0], ops.shape(q)[2]
        return ops.reshape(context, (batch * queries, self.num_heads * self.head_size))

    def call(self, x, attention_mask=None, training=None, output_positions=None):
        # Work on [batch * seq, H]: every dense layer is then a plain 2-D matmul.
        x = ops.cast(x, self.compute_dtype)
        batch, seq, hidden = ops.shape(x)[0], ops.shape(x)[1], self.num_heads * self.head_size
        if attention_mask is not None:
            attention_mask = checks.same_shape(
                attention_mask, (x.shape[:2], tf.shape(x)[:2]),
                "TransformerEncoderBlock: attention_mask (the input_mask of a BertEncoder) must have the shape "
                "[batch, seq] of the input (input_word_ids)",
            )
        flat = ops.reshape(x, (batch * seq, hidden))
        if output_positions is None:
            queries, rows = seq, flat
            q, k, v = accelerated.fused_dense((self.query, self.key, self.value), flat)
        else:
            # Keys and values come from every position, everything else only from the outputs'.
            positions = checks.indices_in_range(
                output_positions, seq,
                "TransformerEncoderBlock: output_positions (the masked_lm_positions of a BertPretrainer) must be in "
                "[0, seq)",
            )
            queries = ops.shape(positions)[1]
            k, v = accelerated.fused_dense((self.key, self.value), flat)
            rows = ops.reshape(tf.gather(x, positions, batch_dims=1), (batch * queries, hidden))
            q = self.query(rows)
        q = q * ops.cast(1.0 / math.sqrt(self.head_size), q.dtype)
        context = self._attention(
            self._split_heads(q, batch, queries),
            self._split_heads(k, batch, seq),
            self._split_heads(v, batch, seq),
            attention_mask,
            training,
        )
        attention = accelerated.dropout(self.attention_output_dropout, self.attention_output(context), training)
        x = accelerated.layer_norm(self.attention_layer_norm, rows + attention, training)
        ffn = accelerated.activation_dense(self._activation_fn, self.intermediate(x), self.output_dense, training)
        ffn = accelerated.dropout(self.output_dropout, ffn, training)
        x = accelerated.layer_norm(self.output_layer_norm, x + ffn, training)
        return ops.reshape(x, (batch, queries, hidden))

    def compute_output_shape(self, x_shape, attention_mask_shape=None, output_positions_shape=None):
        if output_positions_shape is None:
            return x_shape
        return (x_shape[0], output_positions_shape[1], x_shape[2])
