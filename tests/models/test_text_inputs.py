"""text_dataset: every everyday container of raw text (and pairs) to the preprocessor's features,
with labels and weights; bad input fails naming the argument and example.

Most tests pass the texts through unchanged (`_raw`) to check what reaches the preprocessor, in
which order and batches; the real `BertPreprocessor` (real vocabulary) checks the features."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.text_inputs import holds_text, text_dataset
from keras_bert_lite.text.preprocessor import BertPreprocessor

TEXTS = ["A warm, funny film.", "Dull.", "Café crème, naïvely priced!", "The cast is superb and the plot is tight."]
SECOND = ["Loved it.", "", "Too sweet.", "Yes."]


def _raw(text):
    """A stand-in preprocessor that returns what it is given: one text column, or a pair."""
    return {"a": text[0], "b": text[1]} if isinstance(text, tuple) else {"a": text}


@pytest.fixture(scope="module")
def prep(real_vocab_file):
    return BertPreprocessor(real_vocab_file, seq_length=16)


def _batches(dataset):
    return [tf.nest.map_structure(lambda t: t.numpy(), element) for element in dataset]


def _column(dataset, name="a"):
    """Every text that reached the preprocessor under `name`, in order, as Python strings."""
    return [t.decode() for b in _batches(dataset) for t in (b[0] if isinstance(b, tuple) else b)[name]]


@pytest.mark.parametrize(
    "x",
    [
        TEXTS,
        tuple(TEXTS),
        np.array(TEXTS),  # fixed-width <U.. dtype
        np.array(TEXTS, dtype=object),
        np.array([t.encode() for t in TEXTS]),  # bytes
        tf.constant(TEXTS),
        np.array(TEXTS)[:, None],  # a one-column table
        tf.data.Dataset.from_tensor_slices(TEXTS),
        tf.data.Dataset.from_tensor_slices(TEXTS).batch(3),
    ],
    ids=["list", "tuple", "numpy_unicode", "numpy_object", "numpy_bytes", "tensor", "column", "dataset",
         "batched_dataset"],
)
def test_single_texts_from_every_container(x):
    assert holds_text(x)
    batches = _batches(text_dataset(x, preprocessor=_raw, batch_size=3))
    assert [len(b["a"]) for b in batches] == [3, 1] and set(batches[0]) == {"a"}
    assert [t.decode() for b in batches for t in b["a"]] == TEXTS


@pytest.mark.parametrize("x", [TEXTS, tf.data.Dataset.from_tensor_slices(TEXTS)], ids=["list", "dataset"])
def test_drop_remainder_drops_the_last_partial_batch(x):
    dataset = text_dataset(x, preprocessor=_raw, batch_size=3, drop_remainder=True)
    assert [len(b["a"]) for b in _batches(dataset)] == [3]
    assert dataset.element_spec["a"].shape == [3]  # static, as TPUs need


@pytest.mark.parametrize(
    "x",
    [
        (TEXTS, SECOND),
        (np.array(TEXTS), tf.constant(SECOND)),
        list(zip(TEXTS, SECOND)),
        np.array(list(zip(TEXTS, SECOND))),
        tf.constant(list(zip(TEXTS, SECOND))),
        tf.data.Dataset.from_tensor_slices((TEXTS, SECOND)),
    ],
    ids=["column_pair", "mixed_columns", "rows", "numpy_rows", "tensor_rows", "dataset"],
)
def test_text_pairs_from_every_container(x):
    assert holds_text(x)
    dataset = text_dataset(x, preprocessor=_raw, batch_size=3)
    assert _column(dataset, "a") == TEXTS and _column(dataset, "b") == SECOND


@pytest.mark.slow
def test_features_are_the_preprocessors(prep):
    (single,) = _batches(text_dataset(np.array(TEXTS), preprocessor=prep, batch_size=8))
    pair = _batches(text_dataset(list(zip(TEXTS, SECOND)), preprocessor=prep, batch_size=8))[0]
    for actual, expected in ((single, prep(TEXTS)), (pair, prep((tf.constant(TEXTS), tf.constant(SECOND))))):
        assert set(actual) == {"input_word_ids", "input_mask", "input_type_ids"}
        for name in actual:
            assert actual[name].dtype == np.int32 and actual[name].shape == (4, 16)
            np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
    assert pair["input_type_ids"].max() == 1 and single["input_type_ids"].max() == 0


def test_one_string_is_one_example():
    assert _column(text_dataset("A warm, funny film.", preprocessor=_raw)) == ["A warm, funny film."]


def test_labels_and_weights_keep_their_order_and_get_keras_dtypes():
    labels, weights = [1, 0, 1, 0], [1.0, 0.5, 2.0, 0.0]
    batches = _batches(text_dataset(TEXTS, labels, weights, preprocessor=_raw, batch_size=3))
    assert [len(b) for b in batches] == [3, 3]
    got_labels = np.concatenate([b[1] for b in batches])
    assert got_labels.dtype == np.int32 and got_labels.tolist() == labels
    got_weights = np.concatenate([b[2] for b in batches])
    assert got_weights.dtype == np.float32 and got_weights.tolist() == weights
    values = _batches(text_dataset(TEXTS, np.linspace(0, 1, 4), preprocessor=_raw))[0][1]
    assert values.dtype == np.float32  # regression targets
    nested = _batches(text_dataset(TEXTS, {"start": [1, 2, 3, 4], "end": [2, 3, 4, 5]}, preprocessor=_raw))
    assert nested[0][1]["end"].tolist() == [2, 3, 4, 5]
    labelled_pairs = tf.data.Dataset.from_tensor_slices(((TEXTS, SECOND), labels, weights))
    (batch,) = _batches(text_dataset(labelled_pairs, preprocessor=_raw, batch_size=4))
    assert batch[0]["b"].tolist() == [t.encode() for t in SECOND]
    assert batch[1].tolist() == labels and batch[2].tolist() == weights


def test_shuffle_is_a_seeded_permutation_that_changes_every_epoch():
    dataset = text_dataset(TEXTS, [0, 1, 2, 3], preprocessor=_raw, batch_size=4, shuffle=True, seed=3)
    epochs = [_batches(dataset)[0] for _ in range(4)]
    orders = [tuple(labels.tolist()) for _, labels in epochs]
    assert all(sorted(order) == [0, 1, 2, 3] for order in orders)
    assert len(set(orders)) > 1  # reshuffled on every pass
    for features, labels in epochs:  # each text travels with its label
        assert [t.decode() for t in features["a"]] == [TEXTS[label] for label in labels]
    again = text_dataset(TEXTS, [0, 1, 2, 3], preprocessor=_raw, batch_size=4, shuffle=True, seed=3)
    assert tuple(_batches(again)[0][1].tolist()) == orders[0]


@pytest.mark.slow
def test_keras_fits_and_predicts_on_text_datasets(prep):
    """The failures people hit with strings in Keras ("Unrecognized data type", "Invalid dtype: str..")."""
    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=prep.tokenizer.vocab_size, num_hidden_layers=1)
    model = BertClassifier(BertEncoder(config), num_classes=2)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    history = model.fit(text_dataset(np.array(TEXTS), [1, 0, 1, 0], preprocessor=prep, batch_size=2),
                        epochs=1, verbose=0, shuffle=False)
    assert np.isfinite(history.history["loss"][0])
    assert model.predict(text_dataset(np.array(TEXTS), preprocessor=prep), verbose=0).shape == (4, 2)


@pytest.mark.parametrize(
    "x, y, message",
    [
        (["fine", None, "ok"], None, r"x\[1\] is None \(NoneType\), not a string"),
        (["fine", float("nan")], None, r"x\[1\] is nan \(float\), not a string"),
        ([("a", "b"), ("c", "d", "e")], None, r"x: rows of different lengths \[2, 3\]"),
        ((["a", "b"], ["c"]), None, "columns of different lengths: 2 and 1"),
        ([], None, "x is empty"),
        (np.array([["a", "b", "c"]]), None, r"shape \(1, 3\)"),
        (TEXTS, [1, 0, 1], "y has 3 entries for 4 texts"),
        (TEXTS, 1, "y has one value for 4 texts"),
        (TEXTS, ["pos", "neg", "pos", "neg"], "y holds 'pos' and the like; labels must be numbers"),
    ],
)
def test_bad_input_names_the_argument_and_example(x, y, message):
    with pytest.raises(ValueError, match=message):
        text_dataset(x, y, preprocessor=_raw)


def test_more_bad_input():
    with pytest.raises(ValueError, match=r"y: Example 2: label 5 is outside the class range \[0, 2\)"):
        text_dataset(TEXTS, [0, 1, 5, 1], preprocessor=_raw, num_classes=2)
    with pytest.raises(ValueError, match="sample_weight has 2 entries for 4 texts"):
        text_dataset(TEXTS, [0, 1, 1, 1], [1.0, 2.0], preprocessor=_raw)
    with pytest.raises(TypeError, match="x is a dict"):
        text_dataset({"input_word_ids": np.zeros((1, 4), "int32")}, preprocessor=_raw)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        text_dataset(TEXTS, preprocessor=_raw, batch_size=0)
    with pytest.raises(ValueError, match="expected texts"):
        text_dataset(tf.data.Dataset.from_tensor_slices(np.arange(4)), preprocessor=_raw)
    flat_triples = tf.data.Dataset.from_tensor_slices((TEXTS, SECOND, ["a", "b", "c", "d"]))
    with pytest.raises(ValueError, match=r"nest the pair: \(\(text_a, text_b\), label\)"):
        text_dataset(flat_triples, preprocessor=_raw)
    with pytest.raises(ValueError, match="must be None when x is a tf.data.Dataset"):
        text_dataset(tf.data.Dataset.from_tensor_slices(TEXTS), [1, 0, 1, 0], preprocessor=_raw)


def test_holds_text_tells_text_from_features():
    assert not holds_text({"input_word_ids": np.zeros((1, 4), "int32")})
    assert not holds_text(np.zeros((2, 4), "int32"))
    assert not holds_text(tf.data.Dataset.from_tensor_slices({"input_word_ids": np.zeros((2, 4), "int32")}))
    assert not holds_text(None) and not holds_text([])
    assert holds_text(b"bytes") and holds_text([["a", "b"]])
    # The rule is the dtype of all of x, not its first element: a gap before the text is still text
    # (which text_dataset then refuses, naming x[0]); labelled datasets are text by their strings.
    assert holds_text(np.array([None, "late text"], dtype=object)) and holds_text([0, "a"])
    assert holds_text(tf.data.Dataset.from_tensor_slices((["a", "b"], [0, 1])))
    assert not holds_text(tf.data.Dataset.from_tensor_slices(([[1, 2]], [1])))


def test_without_a_preprocessor_the_batches_hold_the_text():
    ((text, labels),) = list(text_dataset(TEXTS[:2], [0, 1], batch_size=2).as_numpy_iterator())
    assert [t.decode() for t in text] == list(TEXTS[:2]) and labels.tolist() == [0, 1]
    ((pair,),) = list(text_dataset((TEXTS[:1], SECOND[:1])).as_numpy_iterator())
    assert [column[0].decode() for column in pair] == [TEXTS[0], SECOND[0]]
