"""BertTokenClassifier: per-position logits, weighted loss over first word pieces, round trip."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.token_classifier import BertTokenClassifier

VOCAB = 64


def _inputs(batch=4, seq=9, seed=0):
    ids = np.random.default_rng(seed).integers(1, VOCAB, (batch, seq)).astype("int32")
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}


def _model(num_classes=5):
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=VOCAB, num_hidden_layers=1))
    return BertTokenClassifier(encoder, num_classes)


def test_logits_per_position():
    model = _model()
    x = _inputs()
    logits = model(x, training=False)
    assert logits.shape == (4, 9, 5) and logits.dtype == "float32"
    sequence = model.encoder(x, training=False)["sequence_output"]
    dense = model.classifier.dense
    np.testing.assert_allclose(logits, np.einsum("bsh,hk->bsk", sequence, dense.kernel) + dense.bias, atol=1e-5)


def test_weighted_loss_counts_only_weighted_positions():
    model = _model()
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")
    model.compile(optimizer="adam", loss=loss)
    x = _inputs()
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 5, (4, 9))
    weights = (rng.random((4, 9)) < 0.4).astype("float32")
    logits = model(x, training=False)
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits).numpy()
    expected = (nll * weights).sum() / weights.sum()
    np.testing.assert_allclose(model.evaluate(x, labels, sample_weight=weights, verbose=0), expected, rtol=1e-5)


def test_keras_round_trip(tmp_path):
    model = _model(num_classes=9)
    path = str(tmp_path / "ner.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, BertTokenClassifier) and loaded.num_classes == 9
    x = _inputs()
    np.testing.assert_array_equal(model(x, training=False), loaded(x, training=False))


def test_bad_num_classes():
    with pytest.raises(ValueError, match="num_classes"):
        _model(num_classes=0)
