"""`.keras` files written by release 0.1.0 load, with the outputs that release computed."""

import pathlib
import warnings

import keras
import numpy as np
import pytest

import keras_bert_lite as kbl

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures" / "keras_v0_1_0"
MODELS = {
    "encoder": kbl.BertEncoder,
    "pretrainer": kbl.BertPretrainer,
    "classifier": kbl.BertClassifier,
    "span_labeler": kbl.BertSpanLabeler,
    "token_classifier": kbl.BertTokenClassifier,
    "feature_extractor": kbl.BertFeatureExtractor,
}


@pytest.fixture(scope="module")
def expected():
    return dict(np.load(FIXTURES / "expected.npz"))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_file_of_release_0_1_0_loads_with_its_outputs(name, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "A total of N objects could not be loaded"
        model = keras.saving.load_model(FIXTURES / f"{name}.keras")
    assert type(model) is MODELS[name]
    inputs = {key.split("/", 1)[1]: value for key, value in expected.items() if key.startswith("inputs/")}
    feed = {key: inputs[key] for key in model.input}
    outputs = model(feed, training=False)
    flat = outputs if isinstance(outputs, dict) else {"output": outputs}
    assert set(flat) == {key.split("/")[1] for key in expected if key.startswith(f"{name}/")}
    for key, value in flat.items():
        if key == "encoder_outputs":  # a list in 0.1.0, one [L, batch, seq, H] tensor now
            stored = [expected[f"{name}/{key}/{i}"] for i in range(len(value))]
            assert f"{name}/{key}/{len(value)}" not in expected
        else:
            stored = expected[f"{name}/{key}"]
        # Tolerance: the same float32 math, in a different order of operations (measured <= 1e-6).
        np.testing.assert_allclose(np.asarray(value), np.asarray(stored), rtol=1e-5, atol=1e-5)
