"""Every model does what Keras offers any model: dtype policies, quantization, LoRA, export, XLA fit,
summaries, variable sequence lengths, `.keras` files (the KerasHub backbone and task checks)."""

import os
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite as kbl

CONFIG = kbl.BertConfig(
    vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
    max_position_embeddings=32,
)
BUILDERS = {
    "encoder": lambda encoder: encoder,
    "pretrainer": kbl.BertPretrainer,
    "classifier": lambda encoder: kbl.BertClassifier(encoder, num_classes=3),
    "span_labeler": kbl.BertSpanLabeler,
    "token_classifier": lambda encoder: kbl.BertTokenClassifier(encoder, num_classes=4),
    "feature_extractor": lambda encoder: kbl.BertFeatureExtractor(encoder, layer_indices=(-1, -2)),
}


def _features(batch=4, seq=12, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, CONFIG.vocab_size, (batch, seq)).astype("int32")
    ids[:, 0] = 2
    ids[1, seq - 4:] = 0
    return {
        "input_word_ids": ids,
        "input_mask": (ids > 0).astype("int32"),
        "input_type_ids": np.concatenate([np.zeros((batch, seq // 2)), np.ones((batch, seq - seq // 2))], 1).astype("int32"),
        "masked_lm_positions": np.tile(np.array([[1, 3, 4]], "int32"), (batch, 1)),
    }


def _build(name, dtype=None, seed=0):
    keras.utils.set_random_seed(seed)
    return BUILDERS[name](kbl.BertEncoder(CONFIG, dtype=dtype))


def _feed(model, features):
    return {key: features[key] for key in model.input}


def _flat(outputs):
    return [np.asarray(tf.cast(t, tf.float32)) for t in keras.tree.flatten(outputs)]


def _relative_error(got, want):
    got, want = np.concatenate([g.ravel() for g in got]), np.concatenate([w.ravel() for w in want])
    return np.linalg.norm(got - want) / np.linalg.norm(want)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16", "bfloat16"])
def test_per_model_dtype_policy(policy):
    """`BertEncoder(config, dtype=...)` sets every layer's policy; task heads follow the encoder."""
    policy = keras.dtype_policies.get(policy)
    encoder = kbl.BertEncoder(CONFIG, dtype=policy)
    classifier = kbl.BertClassifier(encoder, num_classes=3)
    features = _features()
    outputs = encoder(_feed(encoder, features))
    assert {str(t.dtype.name) for t in keras.tree.flatten(outputs)} == {policy.compute_dtype}
    assert classifier(_feed(classifier, features)).dtype == tf.float32  # logits are float32
    for weight in classifier.weights:
        if keras.backend.is_float_dtype(weight.dtype):
            assert keras.backend.standardize_dtype(weight.dtype) == policy.variable_dtype, weight.path
    assert keras.config.dtype_policy().name == "float32"  # nothing global changed
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(encoder))
    assert restored.dtype_policy.name == policy.name


@pytest.mark.slow
def test_global_mixed_policy_trains():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        classifier = _build("classifier")
        classifier.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        history = classifier.fit(_feed(classifier, _features()), np.array([0, 1, 2, 1]), epochs=2, verbose=0)
    finally:
        keras.config.set_dtype_policy(previous)
    assert classifier.encoder.transformer_layers[0].query.compute_dtype == "bfloat16"
    assert np.isfinite(history.history["loss"]).all()


# Largest relative L2 error of all outputs against float32, on this random tiny model (measured:
# int8 <= 0.7 %, float8 <= 8 %, int4 <= 11 %, the classifier's small logits being the worst).
QUANTIZATION_TOLERANCE = {"int8": 0.02, "float8": 0.15, "int4": 0.2}
# int8 on every model; float8 and int4 on the two whose heads differ most (the other task heads
# are Dense layers like the classifier's).
QUANTIZATION_CASES = [(name, "int8") for name in sorted(BUILDERS)] + [
    (name, mode) for mode in ("float8", "int4") for name in ("classifier", "pretrainer")
]


@pytest.mark.slow
@pytest.mark.parametrize("name, mode", QUANTIZATION_CASES)
@pytest.mark.usefixtures("frozen_gc")
def test_quantized_model_stays_close_to_float_and_round_trips(name, mode, tmp_path):
    model = _build(name)
    feed = _feed(model, _features())
    reference = _flat(model(feed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Layer LayerNormalization does not have a `quantize` method"
        model.quantize(mode)
    encoder = model if name == "encoder" else model.encoder
    assert encoder.transformer_layers[0].query.quantization_mode == mode
    quantized = _flat(model(feed))
    error = _relative_error(quantized, reference)
    assert 0 < error < QUANTIZATION_TOLERANCE[mode]  # applied (not silently skipped), and close
    model.save(tmp_path / "quantized.keras")
    restored = keras.saving.load_model(tmp_path / "quantized.keras")
    for got, want in zip(_flat(restored(feed)), quantized):
        np.testing.assert_array_equal(got, want)


@pytest.mark.usefixtures("frozen_gc")
def test_quantized_encoder_layers_are_quantized():
    encoder = _build("encoder")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder.quantize("int8")
    block = encoder.transformer_layers[-1]
    dense_layers = [block.query, block.key, block.value, block.attention_output, block.intermediate,
                    block.output_dense, encoder.pooler.dense]
    assert {layer.quantization_mode for layer in dense_layers} == {"int8"}
    assert block.attention_layer_norm.quantization_mode is None


@pytest.mark.slow
def test_lora_trains_only_lora_weights_and_round_trips(tmp_path):
    classifier = _build("classifier")
    encoder = classifier.encoder
    encoder.enable_lora(4)
    lora = {f"transformer_layer_{i}/{name}/lora_kernel_{ab}" for i in range(2) for name in ("query", "value")
            for ab in "ab"}
    assert {w.path for w in encoder.trainable_weights} == lora
    assert {w.path for w in classifier.trainable_weights} == lora | {"classifier/dense/kernel", "classifier/dense/bias"}
    assert encoder.count_params() > 20 * sum(np.prod(w.shape) for w in encoder.trainable_weights)
    frozen = {w.path: w.numpy() for w in classifier.weights if w.path not in lora and "classifier" not in w.path}
    features, labels = _feed(classifier, _features()), np.array([0, 1, 2, 1])
    classifier.compile(optimizer=keras.optimizers.Adam(0.05), loss=keras.losses.SparseCategoricalCrossentropy(True))
    before = [w.numpy() for w in classifier.trainable_weights]
    classifier.fit(features, labels, epochs=3, verbose=0)
    assert all(np.any(b != w.numpy()) for b, w in zip(before, classifier.trainable_weights))
    for weight in classifier.weights:
        if weight.path in frozen:
            np.testing.assert_array_equal(weight.numpy(), frozen[weight.path], err_msg=weight.path)
    classifier.save(tmp_path / "lora.keras")
    restored = keras.saving.load_model(tmp_path / "lora.keras")
    np.testing.assert_allclose(restored(features), classifier(features), rtol=1e-5, atol=1e-6)
    assert {w.path for w in restored.trainable_weights} == {w.path for w in classifier.trainable_weights}
    with pytest.raises(ValueError, match="already enabled"):
        encoder.enable_lora(4)
    with pytest.raises(ValueError, match="target_names"):
        _build("encoder").enable_lora(4, target_names=["queries"])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_keras_export_serves_the_same_outputs(name, tmp_path):
    model = _build(name)
    feed = _feed(model, _features())
    model.export(str(tmp_path / "export"), verbose=False)
    served = tf.saved_model.load(str(tmp_path / "export"))  # kept alive while its functions run
    outputs = served.serve(feed)
    expected = model(feed, training=False)
    if isinstance(expected, dict):
        assert set(outputs) == set(expected)
        outputs = [outputs[key] for key in sorted(expected)]
        expected = [expected[key] for key in sorted(expected)]
    for got, want in zip(_flat(outputs), _flat(expected)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # float32 rounding of a retraced graph


_SERVE_WITHOUT_THE_PACKAGE = """
import json, sys
import numpy as np, tensorflow as tf
served = tf.saved_model.load(sys.argv[1])
features = {k: np.asarray(v, "int32") for k, v in json.loads(sys.argv[2]).items()}
print(json.dumps(np.asarray(served.serve(features)).tolist()))
assert "keras_bert_lite" not in sys.modules
"""


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.usefixtures("frozen_gc")
def test_exported_quantized_classifier_is_served_without_the_package(tmp_path):
    import json

    classifier = _build("classifier")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        classifier.quantize("int8")
    feed = _feed(classifier, _features())
    classifier.export(str(tmp_path / "export"), verbose=False)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", _SERVE_WITHOUT_THE_PACKAGE, str(tmp_path / "export"),
         json.dumps({k: v.tolist() for k, v in feed.items()})],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path, check=True,
    )
    served = np.array(json.loads(done.stdout.strip().splitlines()[-1]), "float32")
    np.testing.assert_allclose(served, classifier(feed), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pretrainer", "token_classifier"])
def test_jit_compiled_fit(name):
    model = _build(name)
    features = _features()
    batch, seq = features["input_word_ids"].shape
    labels = {
        "pretrainer": {"masked_lm_ids": np.full((batch, 3), 7, "int32"), "masked_lm_weights": np.ones((batch, 3), "float32"),
                       "next_sentence_labels": np.zeros((batch, 1), "int32")},
        "classifier": np.arange(batch) % 3,
        "span_labeler": {"start_positions": np.full(batch, 2), "end_positions": np.full(batch, 3)},
        "token_classifier": np.ones((batch, seq), "int32"),
    }[name]
    loss = None if name in ("pretrainer", "span_labeler") else keras.losses.SparseCategoricalCrossentropy(True)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=loss, jit_compile=True)
    history = model.fit(_feed(model, features), labels, epochs=3, batch_size=batch, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_summary_lists_the_encoder_as_one_nested_model():
    classifier = _build("classifier")
    lines = []
    classifier.summary(line_length=150, print_fn=lambda line, **kwargs: lines.append(line))
    text = "\n".join(lines)
    assert "bert_encoder (BertEncoder)" in text and "classifier (ClassificationHead)" in text
    assert [layer.name for layer in classifier.layers if layer.weights] == ["bert_encoder", "classifier"]


# Keras' model_to_dot(expand_nested=True) maps each tensor a nested model is called with to one of
# its inputs; the pre-trainer also passes the encoder its masked positions, so only its unexpanded
# graph is drawn (README, "Keras-native").
EXPANDABLE = ("encoder", "classifier", "span_labeler", "token_classifier", "feature_extractor")


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_model_graphs_for_plot_model(name):
    """`plot_model`'s graph (`model_to_dot`, which needs pydot only) of every model."""
    model = _build(name)
    graph = keras.utils.model_to_dot(model, show_shapes=True).to_string()
    assert ("embeddings" if name == "encoder" else "bert_encoder") in graph
    if name in EXPANDABLE:
        expanded = keras.utils.model_to_dot(model, expand_nested=True, show_shapes=True).to_string()
        for layer in ("embeddings", "transformer_layer_0", "transformer_layer_1", "pooler"):
            assert layer in expanded, layer


def test_variable_sequence_lengths_and_datasets():
    """KerasHub's backbone checks: any sequence length, `predict` on arrays and on a dataset.

    `encoder_outputs` is layer-major ([L, batch, ...], as the list it replaces), so `predict`
    concatenating batches along the first axis gives it whole only from a single batch.
    """
    encoder = _build("encoder")
    features = _feed(encoder, _features(seq=8))
    full = encoder(features)
    for seq in (1, 2, 5):
        cut = {key: value[:, :seq] for key, value in features.items()}
        assert encoder(cut)["sequence_output"].shape == (4, seq, CONFIG.hidden_size)
    predicted = encoder.predict(features, verbose=0)
    from_dataset = encoder.predict(tf.data.Dataset.from_tensor_slices(features).batch(2), verbose=0)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(predicted[key], full[key], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(from_dataset[key], full[key], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(predicted["encoder_outputs"], full["encoder_outputs"], rtol=1e-5, atol=1e-5)
