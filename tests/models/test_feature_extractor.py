"""BertFeatureExtractor: chosen layers, combined by concatenation, sum or mean."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.feature_extractor import BertFeatureExtractor

VOCAB = 64


@pytest.fixture(scope="module")
def encoder():
    return BertEncoder(BertConfig.preset("tiny", vocab_size=VOCAB, num_hidden_layers=4, hidden_size=32,
                                         num_attention_heads=2, intermediate_size=64))


@pytest.fixture(scope="module")
def inputs():
    ids = np.random.default_rng(0).integers(1, VOCAB, (3, 7)).astype("int32")
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}


def test_concat_of_last_four_layers_is_the_default(encoder, inputs):
    layers = encoder(inputs, training=False)["encoder_outputs"]
    features = BertFeatureExtractor(encoder)(inputs, training=False)
    assert features.shape == (3, 7, 4 * 32)
    np.testing.assert_allclose(features, np.concatenate([layers[3], layers[2], layers[1], layers[0]], -1), atol=1e-6)


@pytest.mark.parametrize("combine", ["sum", "mean"])
def test_sum_and_mean(encoder, inputs, combine):
    layers = encoder(inputs, training=False)["encoder_outputs"]
    features = BertFeatureExtractor(encoder, layer_indices=(0, -2), combine=combine)(inputs, training=False)
    expected = np.asarray(layers[0]) + np.asarray(layers[2])
    np.testing.assert_allclose(features, expected / (2 if combine == "mean" else 1), atol=1e-5)


def test_single_layer_and_round_trip(encoder, inputs, tmp_path):
    model = BertFeatureExtractor(encoder, layer_indices=(-2,))
    np.testing.assert_allclose(
        model(inputs, training=False), encoder(inputs, training=False)["encoder_outputs"][2], atol=1e-6
    )
    path = str(tmp_path / "features.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.layer_indices == (-2,) and loaded.combine == "concat"
    np.testing.assert_array_equal(model(inputs, training=False), loaded(inputs, training=False))


def _ops(model, inputs, types=("MatMul", "BatchMatMulV2")) -> int:
    graph = tf.function(lambda: model(inputs, training=False)).get_concrete_function().graph
    return sum(op.type in types for op in graph.get_operations())


def test_the_encoder_runs_once_whatever_the_number_of_layers(encoder, inputs):
    """The traced graph holds the encoder's matrix products once, not once per requested layer."""
    once = _ops(encoder, inputs)
    assert once > 0
    for layer_indices in [(-1,), (-1, -2, -3, -4), (0, 0, 1)]:
        assert _ops(BertFeatureExtractor(encoder, layer_indices=layer_indices), inputs) == once


@pytest.mark.parametrize("combine", ["sum", "mean"])
def test_sum_and_mean_stack_no_copy_of_the_layers(encoder, inputs, combine):
    """Adds the layers one to another: no stacking (Pack) beyond what the encoder itself does."""
    extractor = BertFeatureExtractor(encoder, layer_indices=(0, 1, 3), combine=combine)
    assert _ops(extractor, inputs, ("Pack",)) == _ops(encoder, inputs, ("Pack",))


@pytest.mark.parametrize(
    "kwargs, message",
    [({"layer_indices": (4,)}, "outside"), ({"layer_indices": (-5,)}, "outside"),
     ({"layer_indices": ()}, "at least one"), ({"combine": "max"}, "combine")],
)
def test_bad_arguments(encoder, kwargs, message):
    with pytest.raises(ValueError, match=message):
        BertFeatureExtractor(encoder, **kwargs)
