"""CoNLL reading: sentences, -DOCSTART-, columns, bad lines."""

import pathlib

import pytest

from keras_bert_lite.data.conll import read_conll

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "conll"


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


def test_columns_are_split_on_spaces_and_tabs_only(tmp_path):
    """A word holding other whitespace stays one word; only a first column -DOCSTART- is a marker."""
    path = tmp_path / "words.conll"
    path.write_bytes(
        "\ufeffNew\u00a0York NNP B-NP B-LOC\n-DOCSTART-x NN\tI-NP O\n\t \nSao\u3000Paulo NNP B-NP B-LOC\n".encode()
    )
    sentences = read_conll(path)
    assert [s.words for s in sentences] == [["New\u00a0York", "-DOCSTART-x"], ["Sao\u3000Paulo"]]
    assert [s.tags for s in sentences] == [["B-LOC", "O"], ["B-LOC"]]
    assert [s.line for s in sentences] == [1, 4]
