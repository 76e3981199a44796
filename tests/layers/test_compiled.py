import json
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.layers.activations import get_activation
from keras_bert_lite.layers.compiled import (
    compiled_activation_matmul,
    compiled_with_recomputed_gradient,
    sparse_softmax_cross_entropy,
)
from keras_bert_lite.layers.layer_norm import LayerNorm

# Tolerance: float32 rounding of XLA's fused loops vs TensorFlow's one-op-at-a-time kernels.
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


def _values_and_gradients(fn, *args, num_differentiable=1):
    wrt = list(args[:num_differentiable])
    with tf.GradientTape() as tape:
        tape.watch(wrt)
        y = fn(*args)
        loss = tf.reduce_sum(y * tf.sin(y))  # a non-trivial upstream gradient
    return [y, *tape.gradient(loss, wrt)]


def test_compiled_function_matches_values_and_gradients_of_several_arguments(compiled_calls):
    def fn(x, w):
        return tf.tanh(x * w) + 3.0

    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(5, 7)).astype("float32"))
    w = tf.constant(rng.normal(size=(7,)).astype("float32"))
    compiled = compiled_with_recomputed_gradient(fn)
    expected = _values_and_gradients(fn, x, w, num_differentiable=2)
    for got, want in zip(_values_and_gradients(compiled, x, w, num_differentiable=2), expected):
        np.testing.assert_allclose(got, want, **TOLERANCE)
    # Inside a graph, as in a training step: forward and backward are both compiled calls.
    in_graph = lambda: _values_and_gradients(compiled, x, w, num_differentiable=2)  # noqa: E731
    assert compiled_calls(in_graph) == 2
    for got, want in zip(tf.function(in_graph)(), expected):
        np.testing.assert_allclose(got, want, **TOLERANCE)


def test_activation_matmul_matches_values_and_gradients(compiled_calls):
    gelu = get_activation("gelu")
    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(scale=2, size=(6, 8)).astype("float32"))
    kernel = tf.constant(rng.normal(size=(8, 5)).astype("float32"))
    compiled = compiled_activation_matmul(gelu)
    plain = lambda x, kernel: tf.matmul(gelu(x), kernel)  # noqa: E731
    expected = _values_and_gradients(plain, x, kernel, num_differentiable=2)
    in_graph = lambda: _values_and_gradients(compiled, x, kernel, num_differentiable=2)  # noqa: E731
    for got, want in zip(tf.function(in_graph)(), expected):
        # Tolerance: as above, plus float32 rounding of the matmuls inside a different graph
        # (measured 4e-6 on gradients of magnitude 0.3).
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # Forward, the backward pass's recomputation of gelu(x), and gelu's gradient.
    assert compiled_calls(in_graph) == 3


# Four feed-forward layers; prints the allocator's bytes in use once the forward pass is done,
# for the activation's output kept by a plain matmul ("plain") or recomputed ("recomputed").
_FORWARD_MEMORY_SCRIPT = """
import json, os
os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"  # so that bytes in use are reported on CPU
import tensorflow as tf
from keras_bert_lite.layers.activations import get_activation
from keras_bert_lite.layers.compiled import compiled_activation_matmul, compiled_with_recomputed_gradient

gelu = get_activation("gelu")
tokens, hidden, intermediate = 4096, 256, 1024  # the small config's feed-forward
x = tf.random.normal([tokens, hidden])
kernels = [(tf.Variable(tf.random.normal([hidden, intermediate]) * 0.05),
            tf.Variable(tf.random.normal([intermediate, hidden]) * 0.05)) for _ in range(4)]
feed_forwards = {
    "plain": lambda inner, kernel: tf.matmul(compiled_with_recomputed_gradient(gelu)(inner), kernel),
    "recomputed": compiled_activation_matmul(gelu),
}
in_use_after_forward = {}

def record(name, loss):
    in_use_after_forward[name] = tf.config.experimental.get_memory_info("CPU:0")["current"]
    return loss

for name, feed_forward in feed_forwards.items():
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            h = x
            for inner_kernel, output_kernel in kernels:
                h = h + feed_forward(tf.matmul(h, inner_kernel), output_kernel)
            loss = tf.reduce_sum(h * h)
            loss = tf.py_function(lambda loss: record(name, loss), [loss], tf.float32)
        return tape.gradient(loss, [k for pair in kernels for k in pair])
    step()
print(json.dumps(in_use_after_forward))
"""


def test_activation_matmul_keeps_only_its_input_between_the_passes():
    done = subprocess.run(
        [sys.executable, "-c", _FORWARD_MEMORY_SCRIPT], capture_output=True, text=True, timeout=300, check=True
    )
    in_use = json.loads(done.stdout.strip().splitlines()[-1])
    activation_bytes = 4096 * 1024 * 4  # one float32 [4096, 1024] GELU output per layer
    # The plain matmul keeps each layer's GELU output until its gradient; the recomputing one
    # keeps none of them (measured: exactly 4 x 16 MiB less).
    assert in_use["plain"] - in_use["recomputed"] >= 4 * activation_bytes * 0.95


def test_cross_entropy_matches_tensorflow_and_names_bad_labels():
    rng = np.random.default_rng(1)
    logits = tf.constant(rng.normal(scale=3, size=(4, 3, 50)).astype("float32"))
    labels = tf.constant(rng.integers(0, 50, size=(4, 3)), tf.int32)
    reference = lambda lg, lb: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lb, logits=lg)  # noqa: E731
    expected = _values_and_gradients(reference, logits, labels)
    for got, want in zip(_values_and_gradients(sparse_softmax_cross_entropy, logits, labels), expected):
        np.testing.assert_allclose(got, want, **TOLERANCE)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label >= number of classes"):
        sparse_softmax_cross_entropy(logits, tf.fill((4, 3), 50))
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative label"):
        sparse_softmax_cross_entropy(logits, tf.fill((4, 3), -1))


def test_layer_norm_training_pass_matches_keras_with_gradients_for_its_weights(compiled_calls):
    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(loc=2, scale=3, size=(3, 4, 16)).astype("float32"))
    norm = LayerNorm(epsilon=1e-12)
    norm.build(x.shape)
    norm.gamma.assign(rng.normal(size=16).astype("float32"))
    norm.beta.assign(rng.normal(size=16).astype("float32"))

    def run(training):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = norm(x, training=training)
            loss = tf.reduce_sum(y * tf.sin(y))
        return [y, *tape.gradient(loss, [x, norm.gamma, norm.beta])]

    reference = keras.layers.LayerNormalization(epsilon=1e-12)
    reference.build(x.shape)
    reference.set_weights(norm.get_weights())
    # Inference runs its own arrangement of TF ops: float32 rounding of O(1) outputs.
    np.testing.assert_allclose(norm(x, training=False), reference(x), rtol=1e-5, atol=1e-5)
    assert compiled_calls(lambda: norm(x, training=True)) == 1
    assert compiled_calls(lambda: norm(x, training=False)) == 0
    for got, want in zip(run(True), run(False)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_layer_norm_over_several_axes_is_keras_own():
    x = np.random.default_rng(4).normal(size=(2, 3, 4)).astype("float32")
    norm, reference = LayerNorm(axis=[1, 2]), keras.layers.LayerNormalization(axis=[1, 2])
    for training in (False, True):
        np.testing.assert_allclose(norm(x, training=training), reference(x), rtol=0, atol=0)


def test_layer_norm_keeps_float32_math_under_mixed_precision():
    norm = LayerNorm(epsilon=1e-12, dtype="mixed_bfloat16")
    x = tf.constant(np.random.default_rng(3).normal(size=(2, 8)).astype("float32"), tf.bfloat16)
    y = norm(x, training=True)
    assert y.dtype == tf.bfloat16
    np.testing.assert_allclose(
        tf.cast(y, tf.float32), tf.cast(norm(x, training=False), tf.float32), atol=1e-2
    )
