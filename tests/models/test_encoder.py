import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite import BertConfig, BertEncoder

TINY = BertConfig.preset("tiny", vocab_size=500, max_position_embeddings=64)


def _inputs(ids, type_ids=None):
    ids = np.asarray(ids, "int32")
    return {
        "input_word_ids": ids,
        "input_mask": (ids > 0).astype("int32"),
        "input_type_ids": np.zeros_like(ids) if type_ids is None else np.asarray(type_ids, "int32"),
    }


@pytest.fixture(scope="module")
def encoder():
    keras.utils.set_random_seed(0)
    return BertEncoder(TINY)


def test_parameter_counts_match_the_paper(monkeypatch):
    # The count needs the real weights' shapes, not their values: zeros in place of 445M truncated-normal
    # draws build both encoders in ~2 s instead of ~14 s.
    monkeypatch.setattr(keras.initializers.TruncatedNormal, "__call__",
                        lambda self, shape, dtype=None: keras.ops.zeros(shape, dtype))
    assert BertEncoder(BertConfig.preset("base")).count_params() == 109_482_240
    assert BertEncoder(BertConfig.preset("large")).count_params() == 335_141_888


def test_output_structure(encoder):
    out = encoder(_inputs([[2, 7, 9, 3, 0]]))
    assert out["sequence_output"].shape == (1, 5, 128)
    assert out["pooled_output"].shape == (1, 128)
    assert len(out["encoder_outputs"]) == TINY.num_hidden_layers
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])


def test_output_positions_give_the_full_outputs_there(encoder):
    ids = np.random.default_rng(4).integers(5, 500, (2, 9))
    ids[1, 6:] = 0
    inputs = _inputs(ids)
    positions = np.array([[0, 8, 2], [3, 5, 1]], "int32")
    full = encoder(inputs)
    at_positions = encoder(inputs, output_positions=positions)
    assert set(at_positions) == {"sequence_output", "pooled_output"}
    # Tolerance: float32 rounding of differently shaped matmuls.
    np.testing.assert_allclose(
        at_positions["sequence_output"], np.take_along_axis(np.asarray(full["sequence_output"]), positions[..., None], 1),
        atol=1e-5,
    )
    np.testing.assert_allclose(at_positions["pooled_output"], full["pooled_output"], atol=1e-5)
    for none in (np.zeros((2, 0), "int32"), ()):  # `()`: no tensor, as the classifier passes it
        no_positions = encoder(inputs, output_positions=none)
        assert no_positions["sequence_output"].shape == (2, 0, 128)
        np.testing.assert_allclose(no_positions["pooled_output"], full["pooled_output"], atol=1e-5)
    symbolic = encoder({name: keras.Input((None,), dtype="int32") for name in inputs}, output_positions=())
    assert symbolic["sequence_output"].shape == (None, 0, 128)


def test_padding_does_not_change_real_positions(encoder):
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 500, (3, 9))
    types = np.concatenate([np.zeros((3, 4)), np.ones((3, 5))], axis=1)
    short = encoder(_inputs(ids, types))
    padded_ids = np.concatenate([ids, np.zeros((3, 23), "int32")], axis=1)
    padded_types = np.concatenate([types, np.zeros((3, 23))], axis=1)
    padded = encoder(_inputs(padded_ids, padded_types))
    np.testing.assert_allclose(padded["sequence_output"][:, :9], short["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(padded["pooled_output"], short["pooled_output"], atol=1e-5)
    for a, b in zip(padded["encoder_outputs"], short["encoder_outputs"]):
        np.testing.assert_allclose(a[:, :9], b, atol=1e-5)


def test_segment_ids_change_outputs(encoder):
    ids = [[2, 11, 12, 3, 13, 14, 3]]
    a = encoder(_inputs(ids, [[0] * 7]))["sequence_output"]
    b = encoder(_inputs(ids, [[0, 0, 0, 0, 1, 1, 1]]))["sequence_output"]
    assert np.abs(np.asarray(a) - np.asarray(b)).max() > 1e-3


def test_position_embeddings_distinguish_identical_tokens(encoder):
    out = np.asarray(encoder(_inputs([[42] * 6]))["sequence_output"])[0]
    assert np.abs(out[0] - out[1]).max() > 1e-3


def test_inference_is_deterministic_and_training_uses_dropout(encoder):
    x = _inputs([[2, 7, 9, 3]])
    first = np.asarray(encoder(x, training=False)["sequence_output"])
    np.testing.assert_array_equal(first, encoder(x, training=False)["sequence_output"])
    assert np.abs(first - np.asarray(encoder(x, training=True)["sequence_output"])).max() > 1e-3


def test_any_sequence_length_up_to_max_positions(encoder):
    assert encoder(_inputs(np.ones((1, 64))))["sequence_output"].shape == (1, 64, 128)
    with pytest.raises(ValueError, match=r"must be in \[1, max_position_embeddings = 64\]; got 65"):
        encoder(_inputs(np.ones((1, 65))))


def test_keras_file_round_trip(encoder, tmp_path):
    path = tmp_path / "encoder.keras"
    encoder.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, BertEncoder) and restored.config == TINY
    x = _inputs([[2, 7, 9, 3, 0, 0]], [[0, 0, 1, 1, 0, 0]])
    a, b = encoder(x), restored(x)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(a[key], b[key])


def test_accepts_a_config_dict():
    assert BertEncoder(TINY.to_dict()).config == TINY


BAD_INPUTS = {
    # name: (change to valid inputs, error, message naming the input)
    "negative id": (lambda x: x["input_word_ids"].__setitem__((0, 1), -1), tf.errors.InvalidArgumentError,
                    r"input_word_ids must be in \[0, vocab_size = 500\)"),
    "id beyond the vocabulary": (lambda x: x["input_word_ids"].__setitem__((0, 1), 500),
                                 tf.errors.InvalidArgumentError, r"input_word_ids must be in \[0, vocab_size = 500\)"),
    "segment beyond the table": (lambda x: x["input_type_ids"].__setitem__((0, 1), 2),
                                 tf.errors.InvalidArgumentError,
                                 r"input_type_ids must be in \[0, type_vocab_size = 2\)"),
    "mask of another shape": (lambda x: x.__setitem__("input_mask", x["input_mask"][:, :3]),
                              (ValueError, tf.errors.InvalidArgumentError), r"input_mask of a BertEncoder\) must have the shape"),
    "segments of another shape": (lambda x: x.__setitem__("input_type_ids", x["input_type_ids"][:, :3]),
                                  (ValueError, tf.errors.InvalidArgumentError),
                                  "input_type_ids must have the shape of input_word_ids"),
}


DYNAMIC_SHAPES = [{name: tf.TensorSpec([None, None], tf.int32) for name in ("input_word_ids", "input_mask",
                                                                          "input_type_ids")}]


@pytest.mark.parametrize("call", ["eager", "graph", "graph_of_unknown_shapes"])
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_inputs_give_one_error_naming_the_input(encoder, case, call):
    change, error, message = BAD_INPUTS[case]
    inputs = _inputs([[2, 7, 9, 3, 0]])
    change(inputs)
    run = {"eager": encoder, "graph": tf.function(encoder),
           "graph_of_unknown_shapes": tf.function(encoder, input_signature=DYNAMIC_SHAPES)}[call]
    with pytest.raises(error, match=message):
        run(inputs)


def test_empty_sequences_are_an_error_naming_the_input(encoder):
    message = r"sequence length of input_word_ids must be in \[1, max_position_embeddings = 64\]"
    with pytest.raises(ValueError, match=message + "; got 0"):
        encoder(_inputs(np.zeros((2, 0))))
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        tf.function(encoder, input_signature=DYNAMIC_SHAPES)(_inputs(np.zeros((2, 0))))
