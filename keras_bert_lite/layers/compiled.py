"""XLA-compiled training passes for chains of elementwise and reduction ops.

TensorFlow runs an activation, a LayerNorm or a softmax cross-entropy as one kernel per op, each
reading and writing the whole tensor, and differentiates it into as many more. Compiling the chain
with XLA fuses it into one loop forward and one loop backward. Measured on a 2-core CPU (forward +
backward, float32): BERT's tanh-GELU on 4 x [4096, 1024] 77 -> 19 ms, 9 LayerNorms on [4096, 256]
52 -> 31 ms, sparse softmax cross-entropy on [640, 30522] ~70 -> ~25 ms. The first compiled call
loads XLA's compiler: ~110 MB more resident memory, once per process.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import tensorflow as tf


@functools.cache  # one compiled program per function and shape, shared by every layer using it
def compiled_with_recomputed_gradient(fn: Callable) -> Callable:
    """Returns `fn` with an XLA-compiled forward pass and an XLA-compiled backward pass.

    The backward pass recomputes `fn` from its inputs inside the compiled kernel, so only the
    inputs are kept between the passes (as with `tf.recompute_grad`), not the intermediates.

    Args:
        fn: a function of float tensors returning one tensor, made of ops XLA can compile;
            gradients flow to every argument.

    Returns:
        A function with `fn`'s signature (positional tensor arguments only) and outputs, for
        training graphs; the result is numerically `fn`'s up to XLA's float rounding.

    Example:

        >>> softplus = compiled_with_recomputed_gradient(tf.math.softplus)
        >>> x = tf.constant([0.0, 1.0])
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = softplus(x)
        >>> [round(float(g), 3) for g in tape.gradient(y, x)]  # sigmoid(x)
        [0.5, 0.731]
    """
    forward, backward = _compiled_passes(fn)

    @tf.custom_gradient
    def call(*args):
        return forward(*args), lambda upstream: backward(upstream, *args)

    return call


@functools.cache
def _compiled_passes(fn: Callable) -> tuple[Callable, Callable]:
    """XLA-compiled `forward(*args) = fn(*args)` and `backward(upstream, *args)` (the gradients
    of `fn` with respect to every argument, recomputing `fn` inside the kernel)."""
    forward = tf.function(fn, jit_compile=True, autograph=False)

    @tf.function(jit_compile=True, autograph=False)
    def backward(upstream, *args):
        with tf.GradientTape() as tape:
            tape.watch(args)
            outputs = fn(*args)
        return tape.gradient(outputs, args, output_gradients=upstream)

    return forward, backward


@functools.cache
def compiled_activation_matmul(fn: Callable) -> Callable:
    """Returns `(x, kernel) -> tf.matmul(fn(x), kernel)` keeping only `x` for the backward pass.

    A plain matmul keeps its input `fn(x)` to compute the kernel's gradient; this one recomputes
    `fn(x)` (one XLA-compiled pass) when the gradient is needed, so between the passes a layer
    holds one [tokens, I] tensor instead of two (the feed-forward's activation input and output).
    Measured with TensorFlow's allocator statistics, the peak of the tensors of one pre-training
    step drops 696 -> 623 MB for the small config and 2,790 -> 2,680 MB for base, for one more
    activation pass (~1 % of the step). `fn` and its gradient run as in
    `compiled_with_recomputed_gradient`; the matmuls are TensorFlow's.

    Args:
        fn: an elementwise function of one float tensor, made of ops XLA can compile.

    Returns:
        A function of x [tokens, I] and kernel [I, H] (same float dtype) returning
        [tokens, H], for training graphs.
    """
    forward, backward = _compiled_passes(fn)
    # A second compiled function for the recomputation, so that graph optimizations cannot
    # merge it with the forward call (which would keep fn(x) alive again).
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

        return tf.matmul(forward(x), kernel), gradient

    return call


@tf.function(jit_compile=True, autograph=False)
def _cross_entropy_and_gradient(logits, labels):
    """[N, V], [N] -> (nll [N], d nll / d logits [N, V] = softmax - one_hot), fused.

    Like TensorFlow's own kernel, the gradient is computed in the forward pass so that the logits
    need not be kept for the backward pass (one [N, V] buffer alive, not two).
    """
    log_normalizer = tf.reduce_logsumexp(logits, axis=-1, keepdims=True)
    nll = log_normalizer[:, 0] - tf.gather(logits, labels, axis=1, batch_dims=1)
    one_hot = tf.one_hot(labels, tf.shape(logits)[-1], dtype=logits.dtype)
    return nll, tf.exp(logits - log_normalizer) - one_hot


@tf.custom_gradient
def _compiled_cross_entropy(logits, labels):
    nll, gradient = _cross_entropy_and_gradient(logits, labels)
    return nll, lambda upstream: (upstream[:, None] * gradient, None)


def sparse_softmax_cross_entropy(logits, labels):
    """Per-example negative log-likelihood of int `labels`, computed by XLA-compiled kernels.

    Args:
        logits: float32 [..., V], unnormalized.
        labels: int [...], class ids in [0, V).

    Returns:
        float32 [...], as `tf.nn.sparse_softmax_cross_entropy_with_logits`.

    Raises:
        InvalidArgumentError: a label is outside [0, V) (compiled kernels would return NaN).
    """
    labels = tf.cast(labels, tf.int32)
    num_classes = tf.shape(logits)[-1]
    checks = [
        tf.debugging.assert_non_negative(labels, message="sparse_softmax_cross_entropy: negative label"),
        tf.debugging.assert_less(
            labels, num_classes, message="sparse_softmax_cross_entropy: label >= number of classes (logits' last dim)"
        ),
    ]
    with tf.control_dependencies(checks):
        flat_labels = tf.reshape(labels, [-1])
    flat_logits = tf.reshape(logits, [-1, num_classes])
    return tf.reshape(_compiled_cross_entropy(flat_logits, flat_labels), tf.shape(labels))
