"""Each layer passes the checks KerasHub's `TestCase.run_layer_test` runs on its own layers.

Ported from keras_hub/src/tests/test_case.py (serialization, build, symbolic and eager calls, a
compiled training step, dtype policies), plus per-layer and global dtype policies.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.layers import (
    BertEmbeddings,
    BertPooler,
    ClassificationHead,
    MaskedLMHead,
    NextSentenceHead,
    SpanHead,
    TransformerEncoderBlock,
)

B, S, H, V = 2, 5, 8, 30
RNG = np.random.default_rng(0)
HIDDEN = RNG.normal(size=(B, S, H)).astype("float32")
IDS = RNG.integers(0, V, (B, S)).astype("int32")


def _embeddings(dtype=None):
    return BertEmbeddings(V, H, max_position_embeddings=S, dtype=dtype)


# name: (constructor taking a dtype policy, call inputs as a dict, output shapes, trainable weights)
CASES = {
    "embeddings": (_embeddings, {"input_word_ids": IDS, "input_type_ids": np.zeros_like(IDS)}, (B, S, H), 5),
    "encoder_block": (
        lambda dtype=None: TransformerEncoderBlock(2, 16, dtype=dtype),
        {"x": HIDDEN, "attention_mask": np.ones((B, S), "int32")},
        (B, S, H),
        16,
    ),
    "pooler": (lambda dtype=None: BertPooler(H, dtype=dtype), {"sequence_output": HIDDEN}, (B, H), 2),
    "masked_lm": (
        lambda dtype=None: MaskedLMHead(_embeddings(dtype), dtype=dtype),
        {"sequence_output": HIDDEN, "masked_positions": np.array([[1, 2], [0, 4]], "int32")},
        (B, 2, V),
        5,  # its own dense, LayerNorm and output bias; the tied table belongs to the embeddings
    ),
    "next_sentence": (lambda dtype=None: NextSentenceHead(dtype=dtype), {"x": HIDDEN[:, 0]}, (B, 2), 2),
    "classification": (lambda dtype=None: ClassificationHead(3, dtype=dtype), {"x": HIDDEN}, (B, S, 3), 2),
    "span": (lambda dtype=None: SpanHead(dtype=dtype), {"sequence_output": HIDDEN}, ((B, S), (B, S)), 2),
}
FLOAT32_OUTPUTS = {"masked_lm", "next_sentence", "classification", "span"}  # logits are float32


def _call(layer, inputs, **kwargs):
    return layer(*inputs.values(), **kwargs)


def _shapes(outputs):
    return keras.tree.map_structure(lambda x: tuple(x.shape), outputs)


def _own_trainable_weights(name, layer):
    if name == "masked_lm":  # the tied embeddings are tracked too, but not the head's own
        tied = {id(w) for w in layer.embedding_layer.weights}
        return [w for w in layer.trainable_weights if id(w) not in tied]
    return layer.trainable_weights


@pytest.mark.parametrize("name", sorted(CASES))
def test_serialization_round_trip(name):
    make, *_ = CASES[name]
    layer = make()
    config = json.dumps(layer.get_config(), sort_keys=True)
    revived = type(layer).from_config(layer.get_config())
    assert json.dumps(revived.get_config(), sort_keys=True) == config
    assert set(dir(revived)) == set(dir(layer))
    serialized = json.dumps(keras.saving.serialize_keras_object(layer), sort_keys=True)
    revived = keras.saving.deserialize_keras_object(json.loads(serialized))
    assert json.dumps(revived.get_config(), sort_keys=True) == config


@pytest.mark.parametrize("name", sorted(CASES))
def test_symbolic_and_eager_calls_and_weights(name):
    make, inputs, expected_shape, num_trainable = CASES[name]
    layer = make()
    symbolic = _call(layer, {k: keras.KerasTensor(v.shape, v.dtype.name) for k, v in inputs.items()})
    assert layer.built
    assert _shapes(symbolic) == expected_shape
    assert len(_own_trainable_weights(name, layer)) == num_trainable
    eager = _call(make(), inputs)
    assert _shapes(eager) == expected_shape
    assert all(keras.backend.standardize_dtype(x.dtype) == "float32" for x in keras.tree.flatten(eager))


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_training_step(name):
    """As KerasHub's: the layer inside a model, fit with `jit_compile=True` (XLA)."""
    make, inputs, *_ = CASES[name]
    layer = make()

    class Wrapper(keras.Model):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def call(self, x):
            return _call(self.inner, x)

    targets = keras.tree.map_structure(np.asarray, _call(layer, inputs))
    model = Wrapper(layer)
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    before = [w.numpy() for w in model.trainable_weights]
    model.fit(inputs, keras.tree.map_structure(lambda t: t + 1.0, targets), batch_size=B, verbose=0)
    assert any(np.any(b != a.numpy()) for b, a in zip(before, model.trainable_weights))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_per_layer_dtype_policy(name, policy):
    """KerasHub's precision test: outputs, output specs, weights and every sub-layer follow the
    layer's own policy (the global policy stays float32)."""
    make, inputs, expected_shape, _ = CASES[name]
    policy = keras.dtype_policies.get(policy)
    layer = make(policy)
    outputs = _call(layer, inputs, training=True) if name != "span" else _call(layer, inputs)
    spec = _call(make(policy), {k: keras.KerasTensor(v.shape, v.dtype.name) for k, v in inputs.items()})
    expected_dtype = "float32" if name in FLOAT32_OUTPUTS else policy.compute_dtype
    for tensor in keras.tree.flatten(outputs) + keras.tree.flatten(spec):
        assert keras.backend.standardize_dtype(tensor.dtype) == expected_dtype
    assert _shapes(outputs) == expected_shape
    for weight in layer.weights:
        if keras.backend.is_float_dtype(weight.dtype):
            assert keras.backend.standardize_dtype(weight.dtype) == policy.variable_dtype, weight.path
    for sublayer in _sublayers(layer):
        assert (sublayer.compute_dtype, sublayer.variable_dtype) == (policy.compute_dtype, policy.variable_dtype)
    assert all(np.isfinite(np.asarray(tf.cast(t, tf.float32))).all() for t in keras.tree.flatten(outputs))


def _sublayers(layer):
    """Every Keras layer an attribute of `layer` (recursively) holds."""
    found = []
    for value in vars(layer).values():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, keras.layers.Layer) and all(item is not seen for seen in found):
                found += [item, *_sublayers(item)]
    return found


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "bfloat16"])
def test_global_dtype_policy(policy):
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        block = TransformerEncoderBlock(2, 16)
        output = block(HIDDEN, np.ones((B, S), "int32"), training=True)
    finally:
        keras.config.set_dtype_policy(previous)
    assert output.dtype == tf.bfloat16
    assert all(sub.dtype_policy.name == policy for sub in _sublayers(block))


def test_bfloat16_block_stays_close_to_float32():
    """The same weights under mixed_bfloat16: within bfloat16's precision of the float32 output."""
    float_block = TransformerEncoderBlock(2, 16, dropout_rate=0.0, attention_dropout_rate=0.0)
    mixed_block = TransformerEncoderBlock(2, 16, dropout_rate=0.0, attention_dropout_rate=0.0, dtype="mixed_bfloat16")
    mask = np.ones((B, S), "int32")
    float_block(HIDDEN, mask), mixed_block(HIDDEN, mask)
    mixed_block.set_weights(float_block.get_weights())
    expected = np.asarray(float_block(HIDDEN, mask))
    got = np.asarray(tf.cast(mixed_block(HIDDEN, mask), tf.float32))
    # Tolerance: bfloat16 keeps 8 bits of mantissa; outputs are LayerNorm-ed (O(1)).
    np.testing.assert_allclose(got, expected, atol=0.1)
    assert np.abs(got - expected).mean() < 0.02
