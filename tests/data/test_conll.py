"""CoNLL reading: sentences, -DOCSTART-, columns, bad lines."""

import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keras_bert_lite.data.ner.conll import CONLL2003_TAGS, read_conll

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


# Property-based: generated files read exactly; one bad line named, or its sentence skipped alone.
_WORD = st.text(st.characters(blacklist_characters=" \t\n\r\ufeff", blacklist_categories=("Cs",)), min_size=1, max_size=12)
_SEPARATOR = st.sampled_from([b"", b" ", b"\t", b" \t ", b"-DOCSTART- -X- -X- O"])
_SETTINGS = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck))


@st.composite
def conll_files(draw):
    """(lines as bytes, sentences as [(words, tags, first line)]) in CoNLL-2003's four columns."""
    lines, sentences = [], []
    if draw(st.booleans()):
        lines += [b"-DOCSTART- -X- -X- O", b""]
    for _ in range(draw(st.integers(1, 6))):
        words = draw(st.lists(_WORD.filter(lambda w: w != "-DOCSTART-"), min_size=1, max_size=8))
        tags = draw(st.lists(st.sampled_from(CONLL2003_TAGS), min_size=len(words), max_size=len(words)))
        sentences.append((words, tags, len(lines) + 1))
        gap = draw(st.sampled_from([" ", "\t", "  "]))
        lines += [gap.join([word, "NN", "I-NP", tag]).encode() for word, tag in zip(words, tags)]
        lines += draw(st.lists(_SEPARATOR, min_size=1, max_size=2).filter(lambda s: s != [b"-DOCSTART- -X- -X- O"] * 2))
    return lines, sentences


def _write(directory, lines, bom=False):
    path = directory / "data.conll"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + b"\n")
    return path


@_SETTINGS
@given(conll_files(), st.booleans())
def test_generated_files_are_read_exactly(tmp_path_factory, generated, bom):
    lines, sentences = generated
    read = read_conll(_write(tmp_path_factory.mktemp("conll"), lines, bom))
    assert [(s.words, s.tags, s.line) for s in read] == sentences


@_SETTINGS
@given(conll_files(), st.data(), st.sampled_from(["one column", "tag", "utf8"]))
def test_a_bad_line_is_named_or_its_sentence_skipped(tmp_path_factory, generated, data, kind):
    lines, sentences = generated
    sentence = data.draw(st.integers(0, len(sentences) - 1), label="bad sentence")
    words, _, first = sentences[sentence]
    line = first + data.draw(st.integers(0, len(words) - 1), label="bad word")
    if kind == "one column":
        lines[line - 1] = lines[line - 1].split()[0]
    elif kind == "tag":
        lines[line - 1] = b"word NN I-NP B-CITY"
    else:
        lines[line - 1] += b"\xff"
    path = _write(tmp_path_factory.mktemp("conll"), lines)
    with pytest.raises(ValueError, match=rf"data\.conll, line {line}: "):
        read_conll(path)
    kept = [s for i, s in enumerate(sentences) if i != sentence]
    if kept:
        assert [(s.words, s.tags, s.line) for s in read_conll(path, on_error="skip")] == kept
