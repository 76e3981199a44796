"""SQuAD features: labels, the window layout at its edges (no questions, empty
contexts, long questions, many windows) and bad arguments."""

import collections
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.squad import (
    SquadExample,
    read_squad,
    squad_dataset,
    squad_features,
    squad_windows,
)
from keras_bert_lite.text.packer import BertPackInputs

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "squad"
WINDOW = dict(max_seq_length=48, doc_stride=16, max_query_length=16)


@pytest.fixture(scope="module")
def tokenizer(real_vocab_file):
    from keras_bert_lite.text.tokenizer import BertTokenizer

    return BertTokenizer(real_vocab_file)


@pytest.fixture(scope="module")
def train_features(tokenizer):
    examples = read_squad(FIXTURES / "train-v1.1.json", is_training=True)
    return examples, squad_features(examples, tokenizer, **WINDOW)


def test_labelled_tokens_cover_the_answer(train_features):
    examples, features = train_features
    found = collections.Counter()
    for n in range(len(features)):
        start, end = features.start_positions[n], features.end_positions[n]
        if start == 0:
            continue
        example = examples[features.example_index[n]]
        context = example.context.encode("utf-8")
        assert context[features.token_starts[n, start]:features.token_ends[n, end]].decode() == example.answers[0]
        found[example.qas_id] += 1
    assert set(found) == {e.qas_id for e in examples}


def test_batches_do_not_change_the_features(tokenizer, train_features):
    examples, features = train_features
    one_at_a_time = squad_features(examples, tokenizer, batch_size=1, **WINDOW)
    for name, values in vars(features).items():
        np.testing.assert_array_equal(getattr(one_at_a_time, name), values, err_msg=name)


def test_dataset_batches_inputs_and_labels(train_features):
    _, features = train_features
    inputs, labels = next(iter(squad_dataset(features, batch_size=4, is_training=False)))
    np.testing.assert_array_equal(inputs["input_word_ids"], features.input_word_ids[:4])
    np.testing.assert_array_equal(labels["start_positions"], features.start_positions[:4])


def _windows(tokenizer, questions, contexts, seq_length=16, max_query_length=4, doc_stride=3):
    packer = BertPackInputs(seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    windows = squad_windows(tokenizer, packer, tf.constant(questions, tf.string), tf.constant(contexts, tf.string),
                            max_query_length, doc_stride)
    return {name: value.numpy() for name, value in windows.items()}


def test_window_count_and_layout(tokenizer):
    context = " ".join(f"w{n}" for n in range(20))  # "w0" is "w", "##0": 40 tokens
    questions = ["one", "a question of many more words than four"]
    windows = _windows(tokenizer, questions, [context, context])
    # Room for 16 - 3 - 1 = 12 and 16 - 3 - 4 = 9 context tokens, 3 apart: 1 + ceil((40 - room) / 3).
    assert windows["windows_per_example"].tolist() == [1 + 28 // 3 + 1, 1 + 31 // 3 + 1]
    assert windows["example_index"].tolist() == [0] * 11 + [1] * 12
    first_long = windows["input_word_ids"][11]
    assert tokenizer.detokenize(first_long[None])[0].numpy().decode() == "[CLS] a question of many [SEP] w0 w1 w2 w3 w [SEP]"
    assert windows["input_type_ids"][11].tolist() == [0] * 6 + [1] * 10
    context_tokens = (windows["token_starts"] >= 0).sum(axis=1)
    assert context_tokens[:11].tolist() == [12] * 10 + [40 - 30] and context_tokens[11:].tolist() == [9] * 11 + [40 - 33]
    # Every context token counts in exactly one window.
    for example, num_tokens in ((0, 40), (1, 40)):
        rows = windows["example_index"] == example
        assert windows["max_context"][rows].sum() == num_tokens


def test_empty_batches_contexts_and_questions(tokenizer):
    empty = _windows(tokenizer, [], [])
    assert empty["input_word_ids"].shape == (0, 16) and empty["windows_per_example"].shape == (0,)
    windows = _windows(tokenizer, ["", "who?"], ["", "\x00\u200b"])  # no text; only characters the tokenizer drops
    assert windows["windows_per_example"].tolist() == [1, 1]
    assert (windows["token_starts"] < 0).all() and not windows["max_context"].any()
    assert windows["input_mask"].sum(axis=1).tolist() == [3, 5]  # [CLS] [SEP] [SEP]; [CLS] who ? [SEP] [SEP]


def test_answers_without_tokens_and_answers_not_at_their_offset(tokenizer):
    context = "The cat sat \u200b\x00 on the mat."  # a word of characters the tokenizer drops
    dropped = SquadExample("zw", "What?", context, ["\u200b\x00"], context.index("\u200b"))
    with pytest.raises(ValueError, match=r"question 'zw': its answer '\\u200b\\x00' at character 12 holds no token"):
        squad_features([dropped], tokenizer, **WINDOW)
    moved = SquadExample("moved", "Where?", context, ["the mat"], 3)  # evaluation data: offsets unchecked
    features = squad_features([moved], tokenizer, **WINDOW)
    assert features.start_positions.tolist() == [0] and features.end_positions.tolist() == [0]


@pytest.mark.parametrize("arguments, message", [
    (dict(max_seq_length=19, max_query_length=16), r"max_seq_length \(19\) must exceed max_query_length \(16\) \+ 3"),
    (dict(doc_stride=0), "doc_stride must be positive, got 0"),
    (dict(max_query_length=0), "max_query_length must be positive, got 0"),
])
def test_bad_window_arguments(tokenizer, arguments, message):
    example = SquadExample("q", "Who?", "Me.", ["Me"], 0)
    with pytest.raises(ValueError, match=message):
        squad_features([example], tokenizer, **{**WINDOW, **arguments})
