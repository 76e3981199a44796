"""CoNLL reading, word-piece label alignment (against the original BERT tokenizer) and
entity-level F1 (against hand-computed values), plus bad input."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.ner import (
    CONLL2003_TAGS,
    TaggedSentence,
    entity_f1,
    entity_spans,
    ner_dataset,
    predicted_tags,
    read_conll,
    tag_inputs,
    word_positions,
)

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "conll"


@pytest.fixture(scope="module")
def preprocessor(real_vocab_file):
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    return BertPreprocessor(real_vocab_file, seq_length=16)


def test_reads_sentences_and_skips_docstart():
    sentences = read_conll(FIXTURES / "train.txt")
    assert [len(s.words) for s in sentences] == [7, 9, 7, 9]
    assert sentences[0].words[:2] == ["Anna", "Schmidt"] and sentences[0].tags[:2] == ["B-PER", "I-PER"]
    assert sentences[0].line == 3 and sentences[3].line == 31
    assert read_conll(FIXTURES / "train.txt", tags=None, tag_column=1)[0].tags[0] == "NNP"


@pytest.mark.parametrize(
    "line, message",
    [("Berlin\n", r"line 4: expected 'word \.\.\. tag' \(at least 2 columns\), found 1"),
     ("Berlin NNP B-NP B-CITY\n", r"line 4: tag 'B-CITY' is not one of"),
     (b"Ber\xfflin NNP B-NP B-LOC\n", "line 4: not valid UTF-8")],
)
def test_bad_lines_are_reported_or_skip_their_sentence(tmp_path, line, message):
    path = tmp_path / "bad.conll"
    head = "-DOCSTART- -X- -X- O\n\nPeter NNP B-NP B-PER\n"
    tail = "lives VBZ B-VP O\n\nAnna NNP B-NP B-PER\n"
    path.write_bytes(head.encode() + (line if isinstance(line, bytes) else line.encode()) + tail.encode())
    with pytest.raises(ValueError, match=rf"bad\.conll, {message}"):
        read_conll(path)
    kept = read_conll(path, on_error="skip")
    assert [s.words for s in kept] == [["Anna"]]


def test_empty_or_missing_file(tmp_path):
    (tmp_path / "empty.txt").write_text("-DOCSTART- -X- -X- O\n\n")
    with pytest.raises(ValueError, match="no usable sentences"):
        read_conll(tmp_path / "empty.txt")
    with pytest.raises(FileNotFoundError):
        read_conll(tmp_path / "missing.txt")


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


# ----------------------------------------------------------------- entity F1 by hand
def test_entity_spans_iob2_and_iob1():
    assert entity_spans(["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-ORG"]) == [
        ("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 5), ("ORG", 5, 6)]
    # IOB1 (CoNLL-2003's original files): I- starts an entity, B- only splits adjacent ones.
    assert entity_spans(["I-ORG", "I-ORG", "O", "I-PER", "B-PER", "I-LOC"]) == [
        ("ORG", 0, 2), ("PER", 3, 4), ("PER", 4, 5), ("LOC", 5, 6)]
    assert entity_spans(["O", "O"]) == []


def test_entity_f1_counts_partial_matches_as_wrong():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "I-ORG", "O", "B-MISC"]]
    predicted = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "I-ORG", "O", "O", "B-MISC"]]
    # gold entities: PER(0,2) LOC(3,4) ORG(0,3) MISC(4,5) = 4
    # predicted: PER(0,2) ok, ORG(3,4) wrong type, ORG(0,2) partial -> wrong, MISC(4,5) ok = 4, 2 correct
    result = entity_f1(gold, predicted)
    assert (result["num_gold"], result["num_predicted"], result["num_correct"]) == (4, 4, 2)
    assert result["precision"] == result["recall"] == result["f1"] == pytest.approx(0.5)
    assert result["per_type"]["ORG"] == pytest.approx({"precision": 0.0, "recall": 0.0, "f1": 0.0, "num_gold": 1})
    assert result["per_type"]["PER"]["f1"] == 1.0
    # one more predicted entity that is wrong: p = 2/5, r = 2/4 -> f1 = 2*.4*.5/.9
    predicted[0][2] = "B-LOC"
    assert entity_f1(gold, predicted)["f1"] == pytest.approx(2 * 0.4 * 0.5 / 0.9)


def test_entity_f1_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="Sentence 0: 2 gold tags but 1 predicted"):
        entity_f1([["O", "O"]], [["O"]])
