"""Word-piece label alignment (against the original BERT tokenizer), datasets and predicted tags."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.ner.conll import CONLL2003_TAGS, TaggedSentence, read_conll
from keras_bert_lite.data.ner.inputs import ner_dataset, predicted_tags, tag_inputs, word_positions

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "conll"


@pytest.fixture(scope="module")
def preprocessor(real_vocab_file):
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    return BertPreprocessor(real_vocab_file, seq_length=16)


@pytest.mark.slow
def test_labels_sit_on_the_first_word_piece_of_each_word(preprocessor, real_vocab_file):
    from absl import flags
    from bert import tokenization

    if not flags.FLAGS.is_parsed():  # the original tokenizer reads a flag with its default
        flags.FLAGS.mark_as_parsed()
    reference = tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    sentences = read_conll(FIXTURES / "train.txt") + [
        TaggedSentence(["Zürich", "unaffable", "\u200b", "U.S."], ["B-LOC", "O", "O", "B-LOC"])
    ]
    batches = list(ner_dataset(sentences, preprocessor, CONLL2003_TAGS, batch_size=3, is_training=False))
    features = {k: np.concatenate([b[0][k] for b in batches]) for k in batches[0][0]}
    labels = np.concatenate([b[1] for b in batches])
    weights = np.concatenate([b[2] for b in batches])
    for n, sentence in enumerate(sentences):
        tokens, expected_labels = ["[CLS]"], [-1]
        for word, tag in zip(sentence.words, sentence.tags):
            pieces = reference.tokenize(word) or ["[UNK]"]
            tokens += pieces
            expected_labels += [CONLL2003_TAGS.index(tag)] + [-1] * (len(pieces) - 1)
        tokens, expected_labels = tokens[:15] + ["[SEP]"], expected_labels[:15] + [-1]
        ids = reference.convert_tokens_to_ids(tokens)
        assert features["input_word_ids"][n, : len(ids)].tolist() == ids
        assert features["input_mask"][n].sum() == len(ids)
        is_first = np.array(expected_labels) >= 0
        assert weights[n, : len(ids)].tolist() == is_first.astype(float).tolist()
        assert weights[n, len(ids):].sum() == 0
        assert labels[n, : len(ids)][is_first].tolist() == [x for x in expected_labels if x >= 0]


def test_truncated_words_get_position_minus_one_and_the_default_tag(preprocessor):
    words = ["word"] * 20
    positions = word_positions([TaggedSentence(words, ["O"] * 20)], preprocessor)[0]
    assert positions.tolist() == list(range(1, 15)) + [-1] * 6
    logits = np.zeros((1, 16, len(CONLL2003_TAGS)), "float32")
    logits[0, 1:15, 5] = 1.0  # B-LOC on every kept word
    assert predicted_tags(logits, [positions], CONLL2003_TAGS) == [["B-LOC"] * 14 + ["O"] * 6]


def test_tag_inputs_works_on_raw_ragged_words(preprocessor):
    words = tf.ragged.constant([["EU", "rejects", "German"], ["Peter"]])
    features, positions = tag_inputs(words, preprocessor.tokenizer, preprocessor.packer)
    assert features["input_word_ids"].shape == (2, 16)
    assert positions.to_list() == [[1, 2, 3], [1]]


def test_unknown_tag_in_memory_is_an_error(preprocessor):
    with pytest.raises(ValueError, match="line 7: tag 'B-FOO'"):
        ner_dataset([TaggedSentence(["x"], ["B-FOO"], 7)], preprocessor, CONLL2003_TAGS, 1, False)


def test_word_windows_cover_every_word_once_with_the_most_context():
    from keras_bert_lite.data.ner.inputs import word_windows

    windows = word_windows([1] * 10, max_pieces=4, stride=2)
    assert [(first, end) for first, end, _ in windows] == [(0, 4), (2, 6), (4, 8), (6, 10)]
    assert [labels.tolist() for *_, labels in windows] == [[True, True, True, False], [False, True, True, False],
                                                           [False, True, True, False], [False, True, True, True]]
    # A word longer than a window is read alone (truncated); windows start at words, never skipping one.
    windows = word_windows([1, 3, 1, 1, 5, 1], max_pieces=4, stride=2)
    assert [(first, end) for first, end, _ in windows] == [(0, 2), (2, 4), (4, 5), (5, 6)]
    assert all(labels.all() for *_, labels in windows)
    assert [(first, end) for first, end, _ in word_windows([], 4, 2)] == [(0, 0)]
