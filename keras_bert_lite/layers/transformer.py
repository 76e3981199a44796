"""`TransformerEncoderBlock`: BERT's post-LayerNorm transformer encoder layer."""

from __future__ import annotations

import math

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers.activations import get_activation
from keras_bert_lite.layers.compiled import compiled_with_recomputed_gradient
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

    Returns:
        float [batch, seq, H].

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
        # Training runs the activation and its gradient as two XLA-compiled kernels; the backward
        # pass recomputes it from its input rather than keeping the ~4 [tokens, I] intermediates
        # of the tanh-GELU per layer (-11 % peak memory for the small config).
        self._training_activation_fn = compiled_with_recomputed_gradient(self._activation_fn)
        self.output_dense = _dense(hidden_size, r, "output_dense")
        hidden_shape = (None, None, hidden_size)
        for layer in (self.query, self.key, self.value, self.attention_output, self.intermediate):
            layer.build(hidden_shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.attention_layer_norm.build(hidden_shape)
        self.output_layer_norm.build(hidden_shape)
        self.built = True

    def _fused_qkv(self, x):
        """[tokens, H] -> [tokens, 3H]: query (pre-scaled), key and value in one matmul.

        The `query`, `key` and `value` layers keep their own kernels, so checkpoints map one to
        one; concatenating them per call copies 3H^2 numbers, and one [tokens, H] x [H, 3H]
        matmul runs faster than three [tokens, H] x [H, H] ones. The 1/sqrt(head_size)
        attention scale is folded into the query kernel and bias (H^2 multiplications instead
        of batch x heads x seq^2).
        """
        scale = 1.0 / math.sqrt(self.head_size)
        kernel = ops.concatenate(
            [self.query.kernel * scale, self.key.kernel, self.value.kernel], axis=1
        )
        bias = ops.concatenate([self.query.bias * scale, self.key.bias, self.value.bias], axis=0)
        return self._matmul_bias(x, kernel, bias)

    def _matmul_bias(self, x, kernel, bias):
        """[tokens, in] -> [tokens, out] as MatMul + BiasAdd, the pattern oneDNN fuses (with a
        following `tf.nn.gelu`, which Keras' Dense + add does not get)."""
        dtype = self.compute_dtype
        return tf.nn.bias_add(tf.matmul(x, ops.cast(kernel, dtype)), ops.cast(bias, dtype))

    def _self_attention(self, x, batch, seq, attention_mask, training):
        """x: [batch * seq, H] -> context [batch * seq, H]."""
        qkv = ops.reshape(self._fused_qkv(x), (batch, seq, 3, self.num_heads, self.head_size))
        qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))  # [3, batch, heads, seq, head_size]
        q, k, v = ops.unstack(qkv, 3, axis=0)  # gradient: one stack (slices would pad and add)
        scores = ops.cast(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), "float32")
        if attention_mask is not None:
            keep = ops.cast(attention_mask, "float32")[:, None, None, :]
            scores = scores + (1.0 - keep) * _MASK_BIAS
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.attention_dropout(probs, training=training)
        context = ops.transpose(ops.matmul(probs, v), (0, 2, 1, 3))
        return ops.reshape(context, (batch * seq, self.num_heads * self.head_size))

    def call(self, x, attention_mask=None, training=None):
        # Work on [batch * seq, H]: every dense layer is then a plain 2-D MatMul + bias, which
        # oneDNN fuses (with the GELU at inference), instead of a reshape-wrapped tensordot.
        batch, seq, hidden = ops.shape(x)[0], ops.shape(x)[1], self.num_heads * self.head_size
        x = ops.reshape(x, (batch * seq, hidden))
        context = self._self_attention(x, batch, seq, attention_mask, training)
        attention = self._matmul_bias(context, self.attention_output.kernel, self.attention_output.bias)
        attention = self.attention_output_dropout(attention, training=training)
        x = ops.cast(self.attention_layer_norm(x + attention), self.compute_dtype)
        inner = self._matmul_bias(x, self.intermediate.kernel, self.intermediate.bias)
        inner = self._training_activation_fn(inner) if training else self._activation_fn(inner)
        ffn = self._matmul_bias(inner, self.output_dense.kernel, self.output_dense.bias)
        ffn = self.output_dropout(ffn, training=training)
        x = ops.cast(self.output_layer_norm(x + ffn), self.compute_dtype)
        return ops.reshape(x, (batch, seq, hidden))

    def compute_output_shape(self, x_shape, attention_mask_shape=None):
        return x_shape

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
