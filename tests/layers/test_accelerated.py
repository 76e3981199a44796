"""Every accelerated kernel equals the reference path it replaces: values and gradients."""

import importlib.util
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.layers import TransformerEncoderBlock, accelerated
from keras_bert_lite.layers.activations import get_activation

# Tolerance: float32 rounding of differently ordered (fused, XLA-compiled) computations of O(1) values.
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def _values_and_gradients(fn, inputs, variables=()):
    """fn's output and the gradients of a non-trivial loss of it w.r.t. `inputs` and `variables`."""
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        y = fn(*inputs)
        loss = tf.reduce_sum(tf.cast(y, tf.float32) * tf.sin(tf.cast(y, tf.float32)))
    return [y, *tape.gradient(loss, [*inputs, *variables])]


def _accelerated_and_reference(fn, inputs, variables=()):
    """(accelerated, reference) values and gradients of `fn`, each traced in a tf.function."""
    results = []
    for use_accelerated in (True, False):
        accelerated.set_enabled(use_accelerated)
        try:
            results.append(tf.function(lambda: _values_and_gradients(fn, inputs, variables))())
        finally:
            accelerated.set_enabled(True)
    return results


def _assert_all_close(got, want, **tolerance):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(tf.cast(a, tf.float32)), np.asarray(tf.cast(b, tf.float32)),
                                   **(tolerance or TOLERANCE))


def _dense(units, inputs, seed, **kwargs):
    layer = keras.layers.Dense(units, bias_initializer="random_normal", **kwargs)
    keras.utils.set_random_seed(seed)
    layer.build((None, inputs))
    return layer


@pytest.fixture
def x():
    return tf.constant(np.random.default_rng(0).normal(size=(12, 16)).astype("float32"))


@pytest.mark.parametrize("mode", ["float", "lora"])
def test_fused_dense_equals_the_layers_one_by_one(x, mode):
    layers = [_dense(16, 16, seed) for seed in range(3)]
    if mode == "lora":
        for layer in layers:
            layer.enable_lora(2)
            layer.lora_kernel_b.assign(np.random.default_rng(1).normal(size=(2, 16)).astype("float32"))
    variables = [w for layer in layers for w in layer.trainable_weights]
    fused, reference = _accelerated_and_reference(
        lambda v: tf.concat(accelerated.fused_dense(layers, v), axis=1), [x], variables
    )
    _assert_all_close(fused, reference)
    if mode == "lora":  # gradients reach the LoRA factors, not the frozen kernels
        assert {w.name for layer in layers for w in layer.trainable_weights} == {"bias", "lora_kernel_a", "lora_kernel_b"}


def test_fused_dense_steps_aside_for_a_quantized_layer(x):
    layers = [_dense(16, 16, seed) for seed in range(3)]
    layers[1].quantize("int8")
    # A quantized kernel holds int8 values without their scale: each layer computes itself.
    np.testing.assert_array_equal(tf.concat(accelerated.fused_dense(layers, x), 1),
                                  tf.concat([layer(x) for layer in layers], 1))


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_layer_norm_equals_keras_layer_normalization(dtype):
    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(loc=2, scale=3, size=(3, 4, 16)).astype("float32"))
    norm = keras.layers.LayerNormalization(epsilon=1e-12, dtype=dtype)
    norm.build(x.shape)
    norm.gamma.assign(rng.normal(size=16).astype("float32"))
    norm.beta.assign(rng.normal(size=16).astype("float32"))
    for training in (True, False):
        got, want = _accelerated_and_reference(
            lambda v, training=training: accelerated.layer_norm(norm, v, training), [x], [norm.gamma, norm.beta]
        )
        assert got[0].dtype == want[0].dtype == norm.compute_dtype
        if dtype == "float32":
            _assert_all_close(got, want)
            continue
        for a, b in zip(got, want):
            # bfloat16 values (8 bits of mantissa): within 1 % of each tensor's largest magnitude.
            a, b = (np.asarray(tf.cast(t, tf.float32)) for t in (a, b))
            np.testing.assert_allclose(a, b, rtol=0, atol=0.01 * np.abs(b).max())


def test_layer_norm_training_and_inference_compute_the_same_values(compiled_calls):
    x = tf.constant(np.random.default_rng(3).normal(size=(6, 16)).astype("float32"))
    norm = keras.layers.LayerNormalization(epsilon=1e-12)
    norm.build(x.shape)
    np.testing.assert_array_equal(accelerated.layer_norm(norm, x, True), accelerated.layer_norm(norm, x, False))
    # Training adds only a compiled gradient; the forward pass is the same TensorFlow ops.
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = accelerated.layer_norm(norm, x, True)
    assert compiled_calls(lambda: tf.gradients(accelerated.layer_norm(norm, x, True), x)) == 1
    assert compiled_calls(lambda: accelerated.layer_norm(norm, x, True)) == 0
    assert tape.gradient(y, x) is not None


@pytest.mark.parametrize("kwargs", [{"axis": [1, 2]}, {"center": False}, {"scale": False}])
def test_layer_norm_steps_aside_for_other_normalizations(kwargs):
    x = np.random.default_rng(4).normal(size=(2, 3, 4)).astype("float32")
    norm = keras.layers.LayerNormalization(**kwargs)
    norm.build(x.shape)
    np.testing.assert_array_equal(accelerated.layer_norm(norm, x, training=True), norm(x))


@pytest.mark.parametrize("mode", ["float", "lora"])
def test_activation_dense_equals_the_activation_then_the_layer(mode):
    gelu = get_activation("gelu")
    inner = tf.constant(np.random.default_rng(3).normal(scale=2, size=(6, 32)).astype("float32"))
    layer = _dense(16, 32, 0)
    if mode == "lora":
        layer.enable_lora(2)
        layer.lora_kernel_b.assign(np.random.default_rng(1).normal(size=(2, 16)).astype("float32"))
    got, want = _accelerated_and_reference(
        lambda v: accelerated.activation_dense(gelu, v, layer, training=True), [inner], layer.trainable_weights
    )
    _assert_all_close(got, want)


def test_activation_dense_steps_aside_for_a_quantized_layer():
    gelu = get_activation("gelu")
    inner = tf.constant(np.random.default_rng(3).normal(size=(6, 32)).astype("float32"))
    layer = _dense(16, 32, 0)
    layer.quantize("int8")
    np.testing.assert_array_equal(accelerated.activation_dense(gelu, inner, layer, training=True), layer(gelu(inner)))


# Four feed-forward layers; prints the allocator's bytes in use once the forward pass is done,
# for the activation's output kept by the reference path or recomputed by the accelerated one.
_FORWARD_MEMORY_SCRIPT = """
import json, os
os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"  # so that bytes in use are reported on CPU
import keras, tensorflow as tf
from keras_bert_lite.layers import accelerated
from keras_bert_lite.layers.activations import get_activation

gelu = get_activation("gelu")
tokens, hidden, intermediate = 1024, 256, 1024  # the small config's feed-forward, 1,024 tokens
x = tf.random.normal([tokens, hidden])
layers = []
for _ in range(4):
    inner, outer = keras.layers.Dense(intermediate), keras.layers.Dense(hidden)
    inner.build((None, hidden)), outer.build((None, intermediate))
    layers.append((inner, outer))
in_use_after_forward = {}

def record(name, loss):
    in_use_after_forward[name] = tf.config.experimental.get_memory_info("CPU:0")["current"]
    return loss

for name in ("reference", "accelerated"):
    accelerated.set_enabled(name == "accelerated")
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            h = x
            for inner, outer in layers:
                h = h + accelerated.activation_dense(gelu, inner(h), outer, training=True)
            loss = tf.reduce_sum(h * h)
            loss = tf.py_function(lambda loss: record(name, loss), [loss], tf.float32)
        return tape.gradient(loss, [w for pair in layers for layer in pair for w in layer.trainable_weights])
    step()
print(json.dumps(in_use_after_forward))
"""


@pytest.mark.slow
def test_activation_dense_keeps_only_its_input_between_the_passes():
    done = subprocess.run(
        [sys.executable, "-c", _FORWARD_MEMORY_SCRIPT], capture_output=True, text=True, timeout=300, check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    in_use = json.loads(done.stdout.strip().splitlines()[-1])
    activation_bytes = 1024 * 1024 * 4  # one float32 [1024, 1024] GELU output per layer
    # The reference keeps each layer's GELU output (and TensorFlow's tanh-GELU intermediates)
    # until its gradient; the accelerated path keeps none of them.
    assert in_use["reference"] - in_use["accelerated"] >= 4 * activation_bytes * 0.95, in_use


def test_dropout_drops_at_its_rate_and_rescales_only_in_training():
    x = np.ones((64, 1000), "float32")
    layer = keras.layers.Dropout(0.1, seed=3)
    y = np.asarray(accelerated.dropout(layer, x, training=True))
    assert set(np.unique(y)) == {0.0, np.float32(1 / 0.9)}
    assert abs((y == 0).mean() - 0.1) < 0.005  # 64,000 draws: std 0.0012
    np.testing.assert_array_equal(accelerated.dropout(layer, x, training=False), x)
    assert np.any(np.asarray(accelerated.dropout(layer, x, training=True)) != y)  # a new mask per call


def test_dropout_gradient_uses_the_forward_mask_and_scale():
    x = tf.constant(np.random.default_rng(4).normal(size=(32, 100)).astype("float32"))
    upstream = tf.constant(np.random.default_rng(5).normal(size=(32, 100)).astype("float32"))
    layer = keras.layers.Dropout(0.3, seed=7)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = accelerated.dropout(layer, x, training=True)
    kept = np.asarray(y) != 0
    assert 0.6 < kept.mean() < 0.8
    expected = np.where(kept, np.asarray(upstream) / 0.7, 0.0)
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=upstream), expected, rtol=1e-6)


def test_dropout_keeps_its_exact_rate_on_bfloat16_activations():
    # Keras' own dropout draws bfloat16 uniforms (7 random bits) and drops 13/128 = 0.1016.
    layer = keras.layers.Dropout(0.1, seed=5, dtype="bfloat16")
    y = np.asarray(keras.ops.cast(accelerated.dropout(layer, keras.ops.ones((4000, 1000), "bfloat16"), True), "float32"))
    assert abs((y == 0).mean() - 0.1) < 0.0008  # 4M draws: std 0.00015


def test_dropout_elements_are_dropped_independently_for_any_shape():
    # Two elements share each 32-bit random number (its 16-bit halves): neighbours must still be
    # independent, and odd sizes must work.
    y = np.asarray(accelerated.dropout(keras.layers.Dropout(0.5, seed=9), np.ones((999, 1001), "float32"), True))
    dropped = (y == 0).reshape(-1)[:-1].reshape(-1, 2)  # (even, odd) neighbour pairs
    assert abs(dropped.mean() - 0.5) < 0.003  # 1M draws: std 0.0005
    assert abs(np.mean(dropped[:, 0] & dropped[:, 1]) - 0.25) < 0.003  # both dropped: rate^2
    assert abs(np.mean(dropped[:-1, 1] & dropped[1:, 0]) - 0.25) < 0.003  # across pairs too


def test_dropout_under_xla_keeps_its_rate():
    layer = keras.layers.Dropout(0.25, seed=3)
    step = tf.function(lambda v: accelerated.dropout(layer, v, training=True), jit_compile=True)
    y = np.asarray(step(np.ones((64, 1000), "float32")))
    assert abs((y == 0).mean() - 0.25) < 0.01


def test_dropout_with_a_noise_shape_is_keras_own():
    layer = keras.layers.Dropout(0.5, noise_shape=(64, 1), seed=1)
    y = np.asarray(accelerated.dropout(layer, np.ones((64, 100), "float32"), training=True))
    assert all(len(set(row)) == 1 for row in y)  # whole rows kept or dropped, as Keras does


def test_cross_entropy_equals_tensorflow_and_names_bad_labels():
    rng = np.random.default_rng(1)
    logits = tf.constant(rng.normal(scale=3, size=(4, 3, 50)).astype("float32"))
    labels = tf.constant(rng.integers(0, 50, size=(4, 3)), tf.int32)
    fn = lambda lg: accelerated.sparse_softmax_cross_entropy(lg, labels)  # noqa: E731
    got, want = _accelerated_and_reference(fn, [logits])
    _assert_all_close(got, want)
    np.testing.assert_allclose(want[0], tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits), rtol=1e-6)
    for use_accelerated in (True, False):
        accelerated.set_enabled(use_accelerated)
        try:
            with pytest.raises(tf.errors.InvalidArgumentError, match="label >= number of classes"):
                accelerated.sparse_softmax_cross_entropy(logits, tf.fill((4, 3), 50))
            with pytest.raises(tf.errors.InvalidArgumentError, match="negative label"):
                accelerated.sparse_softmax_cross_entropy(logits, tf.fill((4, 3), -1))
        finally:
            accelerated.set_enabled(True)


def test_compiled_gradient_of_several_arguments(compiled_calls):
    def fn(x, w):
        return tf.tanh(x * w) + 3.0

    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(5, 7)).astype("float32"))
    w = tf.constant(rng.normal(size=(7,)).astype("float32"))
    expected = _values_and_gradients(fn, [x, w])
    _assert_all_close(_values_and_gradients(accelerated.with_compiled_gradient(fn), [x, w]), expected)
    in_graph = lambda: _values_and_gradients(accelerated.with_compiled_gradient(fn), [x, w])  # noqa: E731
    assert compiled_calls(in_graph) == 1  # the backward pass only
    _assert_all_close(tf.function(in_graph)(), expected)


def _block_and_inputs(dtype="float32"):
    keras.utils.set_random_seed(2)
    block = TransformerEncoderBlock(4, 32, dropout_rate=0.0, attention_dropout_rate=0.0, dtype=dtype)
    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(size=(2, 6, 16)).astype("float32"))
    mask = tf.constant([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    block(x, mask)
    for weight in block.weights:  # non-zero biases, LayerNorm weights away from 1 and 0
        weight.assign(weight + rng.normal(scale=0.1, size=weight.shape).astype("float32"))
    return block, x, mask


def test_block_accelerated_equals_its_reference_path(compiled_calls):
    block, x, mask = _block_and_inputs()
    for training in (True, False):
        fn = lambda v, training=training: block(v, mask, training=training)  # noqa: E731
        got, want = _accelerated_and_reference(fn, [x], block.trainable_weights)
        _assert_all_close(got, want)
    # The training graph runs both LayerNorms' and the GELU's compiled gradient (2 calls);
    # inference and the reference path run no compiled kernel.
    assert compiled_calls(lambda: tf.gradients(block(x, mask, training=True), x)) == 4
    assert compiled_calls(lambda: block(x, mask, training=False)) == 0
    with accelerated.reference_path():
        assert compiled_calls(lambda: tf.gradients(block(x, mask, training=True), x)) == 0

    def matmuls():
        graph = tf.function(lambda: block(x, mask)).get_concrete_function().graph
        return sum(op.type == "MatMul" for op in graph.get_operations())

    # One query/key/value matmul where the reference path has three.
    fused = matmuls()
    with accelerated.reference_path():
        assert matmuls() == fused + 2


def _compiled_programs(step) -> set[str]:
    """The names of the XLA-compiled functions the graph of the `tf.function` `step` calls."""
    graph = step.get_concrete_function().graph.as_graph_def()
    return {node.attr["f"].func.name for node in graph.node
            if "_XlaMustCompile" in node.attr and node.attr["_XlaMustCompile"].b}


def test_a_second_model_of_the_same_shapes_compiles_nothing_new():
    def train_block():
        block, x, mask = _block_and_inputs()  # a new block (new variables) of the same shapes
        step = tf.function(lambda: tf.gradients(block(x, mask, training=True), [x, *block.trainable_weights]))
        step()
        return _compiled_programs(step)

    first = train_block()
    cache = accelerated.with_compiled_gradient.cache_info()
    second = train_block()
    # Both LayerNorms share one compiled gradient; the GELU has its recomputation and gradient.
    assert len(first) == 3
    # The second block calls the very programs the first compiled (XLA compiles a function once per
    # input shape), and the cache grew by nothing.
    assert second == first
    after = accelerated.with_compiled_gradient.cache_info()
    assert after.currsize == cache.currsize and after.misses == cache.misses


def test_the_compiled_gradient_cache_is_bounded():
    def scaled(x, scale):
        return x * scale

    maxsize = accelerated.with_compiled_gradient.cache_info().maxsize
    assert maxsize is not None
    functions = {accelerated.with_compiled_gradient(scaled, scale=float(i)) for i in range(maxsize + 5)}
    assert len(functions) == maxsize + 5  # one per constant
    assert accelerated.with_compiled_gradient.cache_info().currsize == maxsize


def test_block_training_and_inference_compute_the_same_function():
    block, x, mask = _block_and_inputs()
    # Dropout off: the forward pass is the same ops in both modes.
    np.testing.assert_allclose(block(x, mask, training=True), block(x, mask, training=False), rtol=0, atol=1e-6)


def test_the_environment_variable_turns_the_accelerated_path_off(monkeypatch):
    """The variable is read when the module is imported: a new copy of it is loaded for each value."""
    for value, expected in (("0", False), ("off", False), ("1", True)):
        monkeypatch.setenv(accelerated.ENV_VAR, value)
        spec = importlib.util.spec_from_file_location("accelerated_copy", accelerated.__file__)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.enabled() is expected, value
    assert accelerated.enabled()  # the package's own module is untouched
