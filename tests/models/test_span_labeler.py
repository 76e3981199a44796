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


@pytest.fixture(scope="module")
def qa(tmp_path_factory):
    """A span labeler on strings with 16-token windows: too short for the paper's 64-token questions."""
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "wrote", "it", "?", "ann",
                                "did", "in", "1990", "."]) + "\n")
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=14, num_hidden_layers=1, max_position_embeddings=16))
    return BertSpanLabeler(encoder, preprocessor=BertPreprocessor(str(vocab), seq_length=16))


def test_window_layout_fits_the_papers_to_the_sequence_length():
    from keras_bert_lite.models.span_labeler import window_layout

    assert window_layout(384) == {"max_query_length": 64, "doc_stride": 128}
    assert window_layout(128) == {"max_query_length": 64, "doc_stride": 64}
    assert window_layout(16) == {"max_query_length": 8, "doc_stride": 8}
    assert window_layout(6) == {"max_query_length": 2, "doc_stride": 2}  # room for [CLS], [SEP], a token, [SEP]


@pytest.mark.slow
def test_predict_answers_defaults_fit_the_model_and_errors_name_the_users_argument(qa):
    questions, contexts = ["Who wrote it?"], ["Ann did it in 1990. " * 3]
    found = qa.predict_answers(questions, contexts)  # the paper's 64-token questions would not fit
    assert found == qa.predict_answers(questions, contexts, max_query_length=8, doc_stride=8)
    assert contexts[0][found[0]["start"] : found[0]["end"]] == found[0]["answer"]
    with pytest.raises(ValueError, match=r"max_query_length=13, but windows of the preprocessor's seq_length 16 .* "
                                         r"must be in \[1, 12\]"):
        qa.predict_answers(questions, contexts, max_query_length=13)
    with pytest.raises(ValueError, match="doc_stride must be positive, got 0"):
        qa.predict_answers(questions, contexts, doc_stride=0)


def test_empty_input_gives_empty_results_of_the_right_shape(qa):
    assert qa.predict_answers([], []) == []
    outputs = qa.predict([])
    assert {name: value.shape for name, value in outputs.items()} == {"start_logits": (0, 16), "end_logits": (0, 16)}
    ids = {name: np.zeros((0, 16), "int32") for name in ("input_word_ids", "input_mask", "input_type_ids")}
    assert qa.predict(ids)["start_logits"].shape == (0, 16)
    with pytest.raises(ValueError, match="x is None"):
        qa.predict(None)
