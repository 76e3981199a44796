"""`TransformerEncoderBlock`: BERT's post-LayerNorm transformer encoder layer."""

from __future__ import annotations

import math

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers.activations import get_activation
from keras_bert_lite.layers.compiled import compiled_activation_matmul
from keras_bert_lite.layers.dropout import Dropout
from keras_bert_lite.layers.layer_norm import LayerNorm

# Added to the attention scores of padding keys, as in the original BERT code; exp() of it is 0 in
# float32 and it stays finite in float16.
_MASK_BIAS = -10000.0


def _dense(units: int, initializer_range: float, name: str) -> keras.layers.Dense:
    """A Dense sub-layer that holds a kernel and bias (the block applies them itself)."""
    return keras.layers.Dense(
        units,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
        name=name,
    )


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class TransformerEncoderBlock(keras.layers.Layer):
    """One BERT encoder layer (post-LN):

        x = LayerNorm(x + Dropout(Dense(SelfAttention(x, mask))))
        x = LayerNorm(x + Dropout(Dense(act(Dense(x)))))

    Args:
        num_heads: A, attention heads; must divide the hidden size.
        intermediate_size: I, feed-forward width.
        activation: feed-forward activation name ("gelu" = BERT's tanh approximation).
        dropout_rate: dropout on both residual branches.
        attention_dropout_rate: dropout on the attention probabilities.
        initializer_range: stddev of the truncated-normal kernel initializer.
        layer_norm_eps: LayerNorm epsilon.

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
        float [batch, seq, H], or [batch, P, H] with `output_positions` (the same numbers as
        the full output gathered at those positions).

    Sub-layers (the names interop code maps checkpoints onto): `query`, `key`, `value`,
    `attention_output`, `attention_layer_norm`, `intermediate`, `output_dense`,
    `output_layer_norm`; the query, key and value kernels are applied as one fused [H, 3H]
    matmul. Softmax and LayerNorm run in float32 under mixed precision.

    Example:

        >>> block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
        >>> block(ops.ones((2, 5, 8)), ops.ones((2, 5), "int32")).shape
        (2, 5, 8)
    """

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
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.attention_dropout = Dropout(attention_dropout_rate)
        self.attention_output_dropout = Dropout(dropout_rate)
        self.output_dropout = Dropout(dropout_rate)
        self.attention_layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype="float32", name="attention_layer_norm"
        )
        self.output_layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype="float32", name="output_layer_norm"
        )

    def build(self, input_shape):
        hidden_size = input_shape[-1]
        if hidden_size % self.num_heads:
            raise ValueError(
                f"TransformerEncoderBlock: hidden size {hidden_size} is not divisible by "
                f"num_heads {self.num_heads}."
            )
        self.head_size = hidden_size // self.num_heads
        r = self.initializer_range
        self.query = _dense(hidden_size, r, "query")
        self.key = _dense(hidden_size, r, "key")
        self.value = _dense(hidden_size, r, "value")
        self.attention_output = _dense(hidden_size, r, "attention_output")
        self.intermediate = _dense(self.intermediate_size, r, "intermediate")
        self._activation_fn = get_activation(self.activation)
        # Training runs the activation and its gradient as XLA-compiled kernels; the backward pass
        # recomputes it from its input rather than keeping the tanh-GELU's ~4 [tokens, I]
        # intermediates and its output per layer.
        self._training_activation_matmul = compiled_activation_matmul(self._activation_fn)
        self.output_dense = _dense(hidden_size, r, "output_dense")
        hidden_shape = (None, None, hidden_size)
        for layer in (self.query, self.key, self.value, self.attention_output, self.intermediate):
            layer.build(hidden_shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.attention_layer_norm.build(hidden_shape)
        self.output_layer_norm.build(hidden_shape)
        self.built = True

    def _matmul_bias(self, x, kernel, bias):
        """[tokens, in] -> [tokens, out] as MatMul + BiasAdd, the pattern oneDNN fuses (with a
        following `tf.nn.gelu`, which Keras' Dense + add does not get)."""
        dtype = self.compute_dtype
        return tf.nn.bias_add(tf.matmul(x, ops.cast(kernel, dtype)), ops.cast(bias, dtype))

    def _heads(self, x, batch, seq, layers):
        """[batch * seq, H] -> one [batch, heads, seq, head_size] tensor per dense layer in `layers`.

        The layers' kernels are applied as one [tokens, H] x [H, n * H] matmul (faster than n
        matmuls; concatenating copies n * H^2 numbers per call), so checkpoints still map one
        kernel to one layer. The 1/sqrt(head_size) attention scale is folded into the query
        kernel and bias (H^2 multiplications instead of batch x heads x seq^2).
        """
        query_scale = 1.0 / math.sqrt(self.head_size)

        def scaled(layer, weight):
            return weight * query_scale if layer is self.query else weight

        kernel = ops.concatenate([scaled(layer, layer.kernel) for layer in layers], axis=1)
        bias = ops.concatenate([scaled(layer, layer.bias) for layer in layers], axis=0)
        projected = ops.reshape(
            self._matmul_bias(x, kernel, bias), (batch, seq, len(layers), self.num_heads, self.head_size)
        )
        projected = ops.transpose(projected, (2, 0, 3, 1, 4))  # [n, batch, heads, seq, head_size]
        return ops.unstack(projected, len(layers), axis=0)  # gradient: one stack, no pad and add

    def _attention(self, q, k, v, attention_mask, training):
        """q [batch, heads, queries, head_size], k and v [batch, heads, seq, head_size]
        -> context [batch * queries, H]."""
        scores = ops.cast(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), "float32")
        if attention_mask is not None:
            keep = ops.cast(attention_mask, "float32")[:, None, None, :]
            scores = scores + (1.0 - keep) * _MASK_BIAS
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.attention_dropout(probs, training=training)
        context = ops.transpose(ops.matmul(probs, v), (0, 2, 1, 3))  # [batch, queries, heads, size]
        batch, queries = ops.shape(q)[0], ops.shape(q)[2]
        return ops.reshape(context, (batch * queries, self.num_heads * self.head_size))

    def call(self, x, attention_mask=None, training=None, output_positions=None):
        # Work on [batch * seq, H]: every dense layer is then a plain 2-D MatMul + bias, which
        # oneDNN fuses (with the GELU at inference), instead of a reshape-wrapped tensordot.
        batch, seq, hidden = ops.shape(x)[0], ops.shape(x)[1], self.num_heads * self.head_size
        flat = ops.reshape(x, (batch * seq, hidden))
        if output_positions is None:
            queries = seq
            q, k, v = self._heads(flat, batch, seq, (self.query, self.key, self.value))
        else:
            # Keys and values come from every position, everything else only from the outputs'.
            queries = ops.shape(output_positions)[1]
            k, v = self._heads(flat, batch, seq, (self.key, self.value))
            rows = tf.gather(x, ops.cast(output_positions, "int32"), batch_dims=1)
            flat = ops.reshape(rows, (batch * queries, hidden))
            (q,) = self._heads(flat, batch, queries, (self.query,))
        context = self._attention(q, k, v, attention_mask, training)
        attention = self._matmul_bias(context, self.attention_output.kernel, self.attention_output.bias)
        attention = self.attention_output_dropout(attention, training=training)
        x = ops.cast(self.attention_layer_norm(flat + attention), self.compute_dtype)
        inner = self._matmul_bias(x, self.intermediate.kernel, self.intermediate.bias)
        if training:
            output_kernel = ops.cast(self.output_dense.kernel, self.compute_dtype)
            ffn = self._training_activation_matmul(inner, output_kernel)
            ffn = tf.nn.bias_add(ffn, ops.cast(self.output_dense.bias, self.compute_dtype))
        else:
            ffn = self._matmul_bias(self._activation_fn(inner), self.output_dense.kernel, self.output_dense.bias)
        ffn = self.output_dropout(ffn, training=training)
        x = ops.cast(self.output_layer_norm(x + ffn), self.compute_dtype)
        return ops.reshape(x, (batch, queries, hidden))

    def compute_output_shape(self, x_shape, attention_mask_shape=None, output_positions_shape=None):
        if output_positions_shape is None:
            return x_shape
        return (x_shape[0], output_positions_shape[1], x_shape[2])

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            intermediate_size=self.intermediate_size,
            activation=self.activation,
            dropout_rate=self.dropout_rate,
            attention_dropout_rate=self.attention_dropout_rate,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config
