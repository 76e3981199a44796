"""The accelerated kernels of keras_bert_lite, switchable in one place.

Every layer has one reference path: it calls its Keras sub-layers (`Dense`, `LayerNormalization`,
`Dropout`), so quantization, LoRA and dtype policies work as in any Keras model. Where TensorFlow
runs that path slowly on the hardware BERT is trained on, a function here computes the same thing
faster. Each one

- takes the sub-layer it replaces and reads it only through public, mode-aware members (`Dense.kernel`
  merges LoRA; `LayerNormalization.gamma` / `beta`; `Dropout.rate` / `seed_generator`);
- steps aside, calling the sub-layer itself, for any sub-layer in a mode it does not support (a
  quantized `Dense`, whose `kernel` holds raw integers; an RMS or multi-axis normalization; a
  `Dropout` with a `noise_shape`), so it never computes something else;
- computes the same forward ops in training and inference; training only adds a hand-written
  gradient (XLA-compiled, recomputing what it needs from its inputs instead of keeping
  intermediates);
- is tested equal, values and gradients, to the reference path (`tests/layers/test_accelerated.py`).

The switch: `set_enabled(False)`, the `reference_path()` context manager, or the environment
variable `KERAS_BERT_LITE_ACCELERATED=0` (read at import). It is read when a layer's call is traced,
so a `tf.function` (or a compiled `fit`) traced before a change keeps the path it traced. Why each
kernel is faster is said where it is defined; the measurements are in `benchmarks/README.md`.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Sequence

import keras
import tensorflow as tf

from keras_bert_lite.layers import checks

ENV_VAR = "KERAS_BERT_LITE_ACCELERATED"
_enabled = os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


def enabled() -> bool:
    """Whether layers traced from now on use the accelerated kernels (the default)."""
    return _enabled


def set_enabled(value: bool) -> None:
    """Turns the accelerated kernels on or off for layers traced from now on."""
    global _enabled
    _enabled = bool(value)


@contextlib.contextmanager
def reference_path() -> Iterator[None]:
    """Within the block, layers trace their reference path (their Keras sub-layers only).

    Example:

        >>> with reference_path():
        ...     outputs = encoder(features)  # plain Keras computation, for comparison or debugging
    """
    previous = enabled()
    set_enabled(False)
    try:
        yield
    finally:
        set_enabled(previous)


def _float_dense(layer: keras.layers.Layer) -> bool:
    """A `Dense` whose `kernel` is its float weight (with any LoRA update merged in)."""
    return isinstance(layer, keras.layers.Dense) and layer.quantization_mode is None


def fused_dense(layers: Sequence[keras.layers.Dense], x) -> list:
    """`[layer(x) for layer in layers]`, computed as one matmul with the kernels side by side.

    One [tokens, H] x [H, n * out] product runs faster on CPUs than n thinner ones (better cache
    use, one pass over `x`); concatenating the kernels copies n * H * out numbers per call, small
    next to the product. Used for the attention's query, key and value projections.

    Args:
        layers: `Dense` layers without activation, of one input width and compute dtype.
        x: float [tokens, in].

    Returns:
        One [tokens, units] tensor per layer, in the layers' compute dtype.
    """
    dtypes = {layer.compute_dtype for layer in layers}
    plain = all(_float_dense(layer) and layer.activation is keras.activations.linear for layer in layers)
    if not (enabled() and plain and len(dtypes) == 1 and len(layers) > 1):
        return [layer(x) for layer in layers]
    dtype = dtypes.pop()
    kernel = tf.concat([tf.cast(layer.kernel, dtype) for layer in layers], axis=1)
    biases = [
        tf.cast(layer.bias, dtype) if layer.use_bias else tf.zeros([layer.units], dtype) for layer in layers
    ]
    outputs = tf.nn.bias_add(tf.matmul(tf.cast(x, dtype), kernel), tf.concat(biases, axis=0))
    return tf.split(outputs, [layer.units for layer in layers], axis=1)


def _layer_norm_last_axis(x, gamma, beta, epsilon: float):
    """[..., H] -> (x - mean) * (rsqrt(variance + eps) * gamma) + beta over the last axis, in at
    least float32 (as `keras.ops.layer_normalization`).

    Two of its ops broadcast a per-row statistic over the whole tensor, where the general
    `keras.ops.layer_normalization` form takes four.
    """
    dtype = tf.float64 if x.dtype == tf.float64 else tf.float32
    x = tf.cast(x, dtype)
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    variance = tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True)
    return centered * (tf.math.rsqrt(variance + epsilon) * tf.cast(gamma, dtype)) + tf.cast(beta, dtype)


def layer_norm(layer: keras.layers.LayerNormalization, x, training=None):
    """`layer(x)` for a last-axis `LayerNormalization` with centre and scale, in float32.

    In training its gradient runs as one XLA-compiled kernel that recomputes the normalization
    from `x` (TensorFlow would run about ten ops each way and keep their outputs).

    Args:
        layer: a built `keras.layers.LayerNormalization`.
        x: float [..., H].
        training: bool; attaches the compiled gradient.

    Returns:
        float [..., H] in the layer's compute dtype.
    """
    axis = layer.axis if isinstance(layer.axis, (list, tuple)) else [layer.axis]
    last_axis_only = list(axis) in ([-1], [len(x.shape) - 1])
    if not (enabled() and last_axis_only and layer.center and layer.scale and not layer.rms_scaling):
        return layer(x)
    # As in Keras' own call (the layer does not autocast), `x` is normalized as it comes, and
    # only the output is cast to the compute dtype.
    args = (tf.convert_to_tensor(x), tf.convert_to_tensor(layer.gamma), tf.convert_to_tensor(layer.beta))
    if training:
        outputs = with_compiled_gradient(_layer_norm_last_axis, epsilon=float(layer.epsilon))(*args)
    else:
        outputs = _layer_norm_last_axis(*args, epsilon=float(layer.epsilon))
    return tf.cast(outputs, layer.compute_dtype)


def activation_dense(activation: Callable, x, layer: keras.layers.Dense, training=None):
    """`layer(activation(x))`, keeping only `x` between the forward and the backward pass.

    A plain graph keeps `activation(x)` for the kernel's gradient, and TensorFlow's tanh-GELU
    keeps about four more [tokens, I] intermediates; here the backward pass recomputes the
    activation from `x` in one XLA-compiled kernel (which also computes its gradient), so a
    feed-forward layer holds one [tokens, I] tensor instead of several between the passes.

    Args:
        activation: an elementwise function made of ops XLA can compile.
        x: float [tokens, I], the input of the activation.
        layer: the `Dense` applied after it.
        training: bool; attaches the recomputing gradient.

    Returns:
        float [tokens, units] in the layer's compute dtype.
    """
    if not (enabled() and training and _float_dense(layer) and layer.activation is keras.activations.linear):
        return layer(activation(x))
    dtype = layer.compute_dtype
    outputs = _activation_matmul(activation)(tf.cast(x, dtype), tf.cast(layer.kernel, dtype))
    return tf.nn.bias_add(outputs, tf.cast(layer.bias, dtype)) if layer.use_bias else outputs


def dropout(layer: keras.layers.Dropout, x, training=None):
    """`layer(x, training=training)`, drawing the mask from 16-bit halves of Philox numbers.

    Three differences from Keras' TensorFlow dropout, with the same semantics otherwise:
    - The generator is Philox: TensorFlow's stateless ops otherwise let the runtime choose, and
      under XLA on CPUs that choice compiles to a kernel tens of times slower, enough to make a
      jit-compiled training step slower than a plain graph.
    - Each element is kept when a 16-bit random integer is >= round(rate x 65536): one 32-bit
      Philox number serves two elements, half the random numbers of float32 uniforms. The rate is
      exact to 1/65536 whatever the activations' dtype; a bfloat16 uniform, which Keras draws for
      bfloat16 activations, has 7 random bits and drops 13/128 = 10.2 % at rate 0.1.
    - The gradient keeps the boolean mask, not a float copy of it.

    Args:
        layer: a `keras.layers.Dropout`; its `rate` and `seed_generator` are used.
        x: float tensor of any shape.
        training: bool; dropout is applied only when true.

    Returns:
        `x` with each element zeroed with probability `rate` and the others scaled by
        1 / (1 - rate) when training, else `x`.
    """
    if not (enabled() and training and 0 < layer.rate < 1 and layer.noise_shape is None):
        return layer(x, training=training)
    x = tf.cast(x, layer.compute_dtype)
    # Keras keeps the seed state as int64; the stateless ops want int32 under XLA.
    seed = tf.cast(tf.math.floormod(layer.seed_generator.next(), tf.int32.max - 1), tf.int32)
    # Each element is dropped with probability min(round(rate x 65536), 65535) / 65536: the two
    # 16-bit halves of each 32-bit Philox number serve two elements.
    size = tf.size(x)
    bits = tf.random.stateless_uniform([(size + 1) // 2], seed, minval=None, maxval=None, dtype=tf.uint32, alg="philox")
    halves = tf.reshape(tf.bitcast(bits, tf.uint16), [-1])[:size]
    keep = tf.reshape(halves >= min(round(layer.rate * 65536), 65535), tf.shape(x))
    scale = 1.0 / (1.0 - layer.rate)

    # x * keep * scale as two multiplications (half the time of `tf.where` with zeros), with a
    # gradient that keeps the bool `keep` rather than a float copy of it.
    @tf.custom_gradient
    def scale_kept(x):
        def grad(upstream):
            return upstream * tf.cast(keep, upstream.dtype) * scale

        return x * tf.cast(keep, x.dtype) * scale, grad

    return scale_kept(x)


def sparse_softmax_cross_entropy(logits, labels):
    """Per-example negative log-likelihood of int `labels`, as
    `tf.nn.sparse_softmax_cross_entropy_with_logits`.

    Accelerated, it runs as one XLA-compiled kernel that also computes the gradient in the forward
    pass (as TensorFlow's own kernel does), so the logits need not be kept for the backward pass;
    with the MLM head's [predictions, vocab] logits that is the largest tensor of a step.

    Args:
        logits: float32 [..., V], unnormalized.
        labels: int [...], class ids in [0, V).

    Returns:
        float32 [...].

    Raises:
        InvalidArgumentError: a label is outside [0, V) (compiled kernels would return NaN).
    """
    num_classes = tf.shape(logits)[-1]
    labels = checks.indices_in_range(
        labels, num_classes, "sparse_softmax_cross_entropy: a negative label or label >= number of classes "
        "(logits' last dim); labels must be in [0, V)"
    )
    if not enabled():
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    flat_logits = tf.reshape(logits, [-1, num_classes])
    return tf.reshape(_compiled_cross_entropy(flat_logits, tf.reshape(labels, [-1])), tf.shape(labels))


@tf.function(jit_compile=True, autograph=False)
def _cross_entropy_and_gradient(logits, labels):
    """[N, V], [N] -> (nll [N], d nll / d logits [N, V] = softmax - one_hot), fused."""
    log_normalizer = tf.reduce_logsumexp(logits, axis=-1, keepdims=True)
    nll = log_normalizer[:, 0] - tf.gather(logits, labels, axis=1, batch_dims=1)
    one_hot = tf.one_hot(labels, tf.shape(logits)[-1], dtype=logits.dtype)
    return nll, tf.exp(logits - log_normalizer) - one_hot


@tf.custom_gradient
def _compiled_cross_entropy(logits, labels):
    nll, gradient = _cross_entropy_and_gradient(logits, labels)
    return nll, lambda upstream: (upstream[:, None] * gradient, None)


# Keyed by what is compiled (the function and its constants), so every layer of every model and
# trace with equal settings shares one compiled program per input shape; bounded, as callers may
# pass any constants.
@functools.lru_cache(maxsize=64)
def with_compiled_gradient(fn: Callable, **constants) -> Callable:
    """Returns `fn` (same forward ops) with an XLA-compiled gradient that recomputes `fn`.

    Only the inputs are kept between the passes (as with `tf.recompute_grad`), not the
    intermediates; the backward pass recomputes `fn` and differentiates it in one compiled kernel.

    Args:
        fn: a function of float tensors returning one tensor, made of ops XLA can compile;
            gradients flow to every argument. Pass a module-level function (not a new lambda or
            `functools.partial` per call, which would compile anew each time).
        **constants: hashable keyword arguments bound to `fn` (e.g. a LayerNorm's epsilon).

    Returns:
        A function with `fn`'s signature (positional tensor arguments only) and outputs.

    Example:

        >>> softplus = with_compiled_gradient(tf.math.softplus)
        >>> x = tf.constant([0.0, 1.0])
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = softplus(x)
        >>> [round(float(g), 3) for g in tape.gradient(y, x)]  # sigmoid(x)
        [0.5, 0.731]
    """
    fn = functools.partial(fn, **constants)
    backward = _compiled_backward(fn)

    @tf.custom_gradient
    def call(*args):
        return fn(*args), lambda upstream: backward(upstream, *args)

    return call


def _compiled_backward(fn: Callable) -> Callable:
    """XLA-compiled `backward(upstream, *args)`: the gradients of `fn` with respect to every
    argument, recomputing `fn` inside the kernel."""

    @tf.function(jit_compile=True, autograph=False)
    def backward(upstream, *args):
        with tf.GradientTape() as tape:
            tape.watch(args)
            outputs = fn(*args)
        return tape.gradient(outputs, args, output_gradients=upstream)

    return backward


@functools.lru_cache(maxsize=64)  # one entry per activation function
def _activation_matmul(fn: Callable) -> Callable:
    """`(x, kernel) -> tf.matmul(fn(x), kernel)` keeping only `x` for the backward pass, which
    recomputes `fn(x)` in a compiled kernel once the upstream gradient is there."""
    backward = _compiled_backward(fn)
    # A separate compiled function for the recomputation, so that graph optimizations cannot
    # merge it with anything of the forward pass (which would keep fn(x) alive again).
    recompute = tf.function(fn, jit_compile=True, autograph=False)

    @tf.custom_gradient
    def call(x, kernel):
        def gradient(upstream):
            # Without the dependency on `upstream` the recomputation depends on `x` alone and the
            # executor would run it during the forward pass, keeping its output alive again.
            with tf.control_dependencies([upstream]):
                activation = recompute(x)
            kernel_gradient = tf.matmul(activation, upstream, transpose_a=True)
            (x_gradient,) = backward(tf.matmul(upstream, kernel, transpose_b=True), x)
            return x_gradient, kernel_gradient

        return tf.matmul(fn(x), kernel), gradient

    return call
