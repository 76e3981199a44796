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


WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "angela", "merkel", "visited", "paris", ".", "berlin", "##er",
         "cafe", "!"]
TEXT = "Angela Merkel visited Berlin. " * 6 + "Café Paris!"  # 33 words of one piece each


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    from keras_bert_lite.data.ner.conll import CONLL2003_TAGS
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    keras.utils.set_random_seed(5)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=len(WORDS), num_hidden_layers=1,
                                            max_position_embeddings=40))
    return BertTokenClassifier(encoder, num_classes=len(CONLL2003_TAGS), label_names=CONLL2003_TAGS,
                               preprocessor=BertPreprocessor(str(vocab), seq_length=16))


def test_words_are_the_tokenizers_words_with_character_offsets(tagger):
    assert tagger.split_words(["Berlin. Café  Paris!", ""]) == [["Berlin", ".", "Café", "Paris", "!"], []]
    (entity,) = _tag_everything(tagger, "I-PER").predict_entities("  Café\tParis! ")[0]
    assert (entity["start"], entity["end"], entity["text"]) == (2, 13, "Café\tParis!")


def _tag_everything(tagger, tag):
    """A copy of `tagger` whose head gives every word `tag`."""
    model = BertTokenClassifier.from_config(tagger.get_config())
    model.set_weights(tagger.get_weights())
    kernel, bias = model.classifier.dense.get_weights()
    bias[:] = 0.0
    bias[tagger.label_names.index(tag)] = 100.0
    model.classifier.dense.set_weights([np.zeros_like(kernel), bias])
    return model


@pytest.mark.slow
def test_long_texts_are_read_in_windows_and_every_word_is_labelled(tagger, caplog):
    words = tagger.split_words(TEXT)[0]
    assert len(words) == 33
    labels = tagger.predict_labels([TEXT, words])  # a string and its word list: the same labels
    assert len(labels[0]) == 33 and labels[1] == labels[0]
    # Words past the first window are tagged: one PER entity from the first character to the last.
    (entity,) = _tag_everything(tagger, "I-PER").predict_entities([TEXT])[0]
    assert (entity["start"], entity["end"]) == (0, len(TEXT))
    # The first window holds the first 14 words (seq_length 16 less [CLS] and [SEP]) and labels those with at
    # least as much context on their nearer side as in the next window (7 pieces on): words 0-10. These have the
    # probabilities of the same 14 words read alone; words 11-13 come from the next window, in other context.
    whole = tagger.word_probabilities([words])[0]
    alone = tagger.word_probabilities([words[:14]])[0]
    np.testing.assert_allclose(whole[:11], alone[:11], atol=1e-6)  # float32, the same window
    assert np.abs(whole[11:14] - alone[11:14]).max(axis=-1).min() > 1e-4
    assert len(tagger.predict_labels(TEXT, doc_stride=13)[0]) == 33
    with caplog.at_level("WARNING"):  # fit and evaluate see the first 14 pieces, and say so
        tagger.text_batches([TEXT, "Berlin", words[:14], words[:15]])
    assert "2 of 4 sentences have more word pieces than seq_length=16 holds" in caplog.text
    with pytest.raises(ValueError, match="doc_stride must be a positive integer, got 0"):
        tagger.predict_labels(TEXT, doc_stride=0)


def test_empty_input_gives_empty_results_of_the_right_shape(tagger):
    for empty in ([], np.array([], object)):
        assert tagger.predict(empty).shape == (0, 16, 9)
        assert tagger.predict_labels(empty) == [] and tagger.predict_entities(empty) == []
    with pytest.raises(ValueError, match="x is None"):
        tagger.predict(None)
