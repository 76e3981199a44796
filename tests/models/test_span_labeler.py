"""BertSpanLabeler: start/end logits (its loss: tests/models/test_losses.py), training and `.keras` round trip."""

import keras
import numpy as np
import pytest

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.span_labeler import BertSpanLabeler

VOCAB = 64


def _inputs(batch=4, seq=10, seed=0):
    ids = np.random.default_rng(seed).integers(1, VOCAB, (batch, seq)).astype("int32")
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}


def _model():
    return BertSpanLabeler(BertEncoder(BertConfig.preset("tiny", vocab_size=VOCAB, num_hidden_layers=1)))


def test_outputs_are_per_position_projections_of_the_sequence_output():
    model = _model()
    x = _inputs()
    out = model(x, training=False)
    assert set(out) == {"start_logits", "end_logits"}
    assert out["start_logits"].shape == (4, 10) and out["end_logits"].dtype == "float32"
    sequence = model.encoder(x, training=False)["sequence_output"]
    dense = model.span_head.dense
    both = np.einsum("bsh,hk->bsk", sequence, dense.kernel) + dense.bias
    np.testing.assert_allclose(out["start_logits"], both[..., 0], atol=1e-5)
    np.testing.assert_allclose(out["end_logits"], both[..., 1], atol=1e-5)


@pytest.mark.slow
def test_fit_learns_positions_and_round_trips(tmp_path):
    keras.utils.set_random_seed(0)
    model = _model()
    model.compile(optimizer=keras.optimizers.Adam(5e-3))
    x = _inputs(batch=8)
    y = {"start_positions": np.arange(8) % 5 + 1, "end_positions": np.arange(8) % 5 + 3}
    history = model.fit(x, y, epochs=25, batch_size=8, verbose=0).history
    assert history["loss"][-1] < 0.3 * history["loss"][0]
    assert history["start_accuracy"][-1] == 1.0 and history["end_accuracy"][-1] == 1.0
    path = str(tmp_path / "qa.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, BertSpanLabeler)
    for name, value in model(x, training=False).items():
        np.testing.assert_array_equal(value, loaded(x, training=False)[name])


def test_missing_labels_are_a_clear_error():
    model = _model()
    model.compile(optimizer="adam")
    with pytest.raises(KeyError, match="start_positions"):
        model.fit(_inputs(), {"start": np.zeros(4)}, verbose=0)
