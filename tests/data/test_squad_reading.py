"""SQuAD JSON reading: the fixtures, every kind of bad record (file, line, question id; honoured by
on_error="skip"), line numbers found in one pass, and fuzzed documents."""

import json
import pathlib

import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st

from keras_bert_lite.data.squad import read_squad, reading

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "squad"
CONTEXT = "The cat sat on the mat."


def test_reads_v1_and_v2():
    train = read_squad(FIXTURES / "train-v1.1.json", is_training=True)
    assert [e.qas_id for e in train] == ["d1", "d2", "d3", "m1", "m2", "m3"]
    assert train[0].answers == ["the Volga"] and train[0].context[train[0].answer_start:].startswith("the Volga")
    dev = read_squad(FIXTURES / "dev-v1.1.json", is_training=False)
    assert dev[0].answers == ["1895", "in 1895", "1895"]
    v2 = read_squad(FIXTURES / "v2.0.json", is_training=True)
    assert [e.is_impossible for e in v2] == [False, True, False, True]
    assert v2[1].answers == [] and v2[1].answer_start == -1


def _write(tmp_path, document, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=1))
    return path


def _document(*qas, context=CONTEXT):
    good = {"id": "good", "question": "Who sat?", "answers": [{"text": "The cat", "answer_start": 0}]}
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [good, *qas]}]}]}


def _line_of(path, text):
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _question(qas_id, **fields):
    return {"id": qas_id, "question": "Where?", "answers": [{"text": "the mat", "answer_start": 15}], **fields}


BAD_QUESTIONS = [
    # A string "false" is not false: it must not drop the answer and train as unanswerable.
    (_question("s", is_impossible="false"), r"'is_impossible' must be true or false, got the string 'false'"),
    (_question("n", is_impossible=None), r"'is_impossible' must be true or false, got null"),
    (_question("e", answers=[{"text": "", "answer_start": 4}]), r"answer 0 has an empty 'text' \(at character 4\)"),
    (_question("neg", answers=[{"text": "", "answer_start": -7}]), r"answer 0 has an empty 'text' \(at character -7\)"),
    (_question("w", answers=[{"text": "  ", "answer_start": 3}]), r"answer 0 has an empty 'text'"),
    (_question("a", answers=None), r"its 'answers' is null, not a list"),
    (_question("o", answers=[["the mat", 15]]), r"answer 0 is a list, not an object"),
    (_question("b", answers=[{"text": "the mat", "answer_start": True}]), r"'answer_start' is true, not an integer"),
    (_question("f", answers=[{"text": "the mat", "answer_start": 15.0}]), r"'answer_start' is the number 15\.0"),
    (_question("t", answers=[{"text": 5, "answer_start": 15}]), r"answer 0's 'text' is the number 5, not a string"),
    (_question("q", question=["Where?"]), r"its 'question' is a list, not a string"),
    (_question("u", question="Wh\ud800ere?"), r"its 'question' holds an unpaired surrogate \(\\ud800\) at character 2"),
    (_question("m", answers=[{"text": "the mat", "answer_start": 3}]),
     r"answer 'the mat' does not occur at character 3 of its context \(found ' cat sa'\)"),
    (_question("none", answers=[]), r"question 'none' has no answer and is not marked is_impossible"),
    (_question("good"), r"question 'good': the id repeats the question at line \d+ \(predictions are keyed by id\)"),
]


@pytest.mark.parametrize("question, message", BAD_QUESTIONS, ids=[q["id"] for q, _ in BAD_QUESTIONS])
def test_bad_questions_name_file_line_and_id(tmp_path, question, message):
    path = _write(tmp_path, _document(question))
    lines = [n for n, line in enumerate(path.read_text().splitlines(), 1) if f'"id": "{question["id"]}"' in line]
    expected = rf"bad\.json, line {lines[-1]}: question '{question['id']}'"
    with pytest.raises(ValueError, match=expected) as raised:
        read_squad(path, is_training=True)
    assert raised.match(message)
    assert [e.qas_id for e in read_squad(path, is_training=True, on_error="skip")] == ["good"]


def test_evaluation_files_skip_only_the_offset_check(tmp_path):
    moved = _question("moved", answers=[{"text": "the mat", "answer_start": 3}, {"text": "mat", "answer_start": 19}])
    path = _write(tmp_path, _document(moved, _question("silent", answers=[])))
    examples = read_squad(path, is_training=False)
    assert [(e.qas_id, e.answers) for e in examples] == [
        ("good", ["The cat"]), ("moved", ["the mat", "mat"]), ("silent", [])
    ]
    with pytest.raises(ValueError, match="'is_impossible' must be true or false"):
        read_squad(_write(tmp_path, _document(_question("s", is_impossible="false"))), is_training=False)


@pytest.mark.parametrize("paragraphs, message", [
    ([{"context": CONTEXT, "qas": None}], r"paragraph 0 of article 't': its 'qas' is null, not a list"),
    ([{"qas": []}], r"paragraph 0 of article 't': 'context' is null, not a string"),
    ([["a list"]], r"paragraph 0 of article 't' is not an object"),
    ([{"context": "caf\udce9", "qas": []}], r"paragraph 0 of article 't': 'context' holds an unpaired surrogate \(\\udce9\)"),
])
def test_bad_paragraphs_are_bad_records(tmp_path, paragraphs, message):
    good = _document()["data"][0]
    document = {"data": [{"title": "t", "paragraphs": paragraphs}, good]}
    path = _write(tmp_path, document)
    line = _line_of(path, '"paragraphs"') + 1  # the paragraph opens on the next line
    with pytest.raises(ValueError, match=rf"bad\.json, line {line}: {message}"):
        read_squad(path, is_training=True)
    assert [e.qas_id for e in read_squad(path, is_training=True, on_error="skip")] == ["good"]


def test_bad_articles_are_bad_records(tmp_path):
    document = {"data": [["not", "an", "article"], {"title": "x", "paragraphs": None}, _document()["data"][0]]}
    path = _write(tmp_path, document)
    with pytest.raises(ValueError, match=r"bad\.json, line 3: article 0 is not an object with a 'paragraphs' list"):
        read_squad(path, is_training=True)
    assert [e.qas_id for e in read_squad(path, is_training=True, on_error="skip")] == ["good"]


def test_bad_files(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"data": [\n  {"title": "x",\n  "paragraphs": [}\n]}')
    with pytest.raises(ValueError, match=r"broken\.json, line 3: not valid JSON"):
        read_squad(path, is_training=True)
    with pytest.raises(ValueError, match="'data' list"):
        read_squad(_write(tmp_path, {"version": "1.1"}), is_training=True)
    with pytest.raises(ValueError, match="'data' list"):
        read_squad(_write(tmp_path, [1, 2]), is_training=True)
    deep = tmp_path / "deep.json"
    deep.write_text('{"data": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ValueError, match=r"deep\.json: JSON nested too deeply"):
        read_squad(deep, is_training=True)
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(json.dumps(_document(), ensure_ascii=False).replace("cat", "caf\u00e9").encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.json: not valid UTF-8"):
        read_squad(latin1, is_training=True)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        read_squad(tmp_path / "missing.json", is_training=True)
    with pytest.raises(ValueError, match=r"no usable questions \(1 bad records skipped\)"):
        read_squad(_write(tmp_path, {"data": [{"paragraphs": [{"context": CONTEXT, "qas": [{"id": 1}]}]}]}),
                   is_training=True, on_error="skip")


def test_lines_are_found_in_one_pass_however_many_records_are_bad(tmp_path, monkeypatch):
    """Reading stays linear: the file's lines are indexed once, not searched per question."""
    qas = [_question(f"q{n}", is_impossible="no") for n in range(300)]
    path = _write(tmp_path, _document(*qas))
    scans = []
    original = reading._json_lines
    monkeypatch.setattr(reading, "_json_lines", lambda raw: scans.append(1) or original(raw))
    examples = read_squad(path, is_training=True, on_error="skip")
    assert [e.qas_id for e in examples] == ["good"] and len(scans) == 1
    scans.clear()
    read_squad(FIXTURES / "train-v1.1.json", is_training=True)
    assert not scans  # a clean file is never scanned for lines


def test_line_numbers_follow_the_json_structure(tmp_path):
    """Ids inside strings, escaped quotes and compact layouts do not confuse the line index."""
    tricky = '{"id": "fake"} say \\"id\\": \\"q2\\", "qas": ['
    document = _document(_question("q2", is_impossible=0), context=tricky + CONTEXT)
    document["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = len(tricky)
    path = tmp_path / "compact.json"
    text = json.dumps(document).replace('"id": "q2"', '\n"id": "q2"')  # all on line 1 but the real id
    path.write_text(text)
    with pytest.raises(ValueError, match=r"compact\.json, line 2: question 'q2'"):
        read_squad(path, is_training=True)


_JSON_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 40), st.floats(allow_nan=False), st.text(max_size=8),
    st.lists(st.integers(-1, 3), max_size=2), st.dictionaries(st.sampled_from(["text", "id", "x"]), st.none(), max_size=2),
)


def _maybe(strategy):
    """The expected value 9 times in 10, another JSON value otherwise."""
    return st.integers(0, 9).flatmap(lambda n: _JSON_VALUES if n == 0 else strategy)


_ANSWER = _maybe(st.sampled_from([("The cat", 0), ("the mat", 15), ("cat", 4)])).map(
    lambda a: {"text": a[0], "answer_start": a[1]} if isinstance(a, tuple) else a
) | st.fixed_dictionaries({"text": _maybe(st.sampled_from(["cat", "", " "])), "answer_start": _JSON_VALUES})
_QUESTION = st.fixed_dictionaries(
    {"id": _maybe(st.text(min_size=1, max_size=6)), "question": _maybe(st.text(max_size=10)),
     "answers": _maybe(st.lists(_ANSWER, max_size=2))},
    optional={"is_impossible": _maybe(st.booleans())},
)
_PARAGRAPH = st.fixed_dictionaries({"context": _maybe(st.sampled_from([CONTEXT, ""])),
                                    "qas": _maybe(st.lists(_maybe(_QUESTION), max_size=4))})
_DOCUMENT = st.fixed_dictionaries(
    {"data": st.lists(_maybe(st.fixed_dictionaries({"paragraphs": _maybe(st.lists(_maybe(_PARAGRAPH), max_size=3))})),
                      min_size=1, max_size=3)}
)


@given(document=_DOCUMENT, is_training=st.booleans())
def test_fuzzed_documents_read_or_fail_with_one_clear_error(document, is_training):
    path = "ram://squad/fuzz.json"  # TensorFlow's in-memory file system: no disk in the loop
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(json.dumps(document, indent=1))
    try:
        skipped = read_squad(path, is_training=is_training, on_error="skip")
    except ValueError as e:
        assert str(e).startswith(f"{path}: no usable questions")
        skipped = []
    try:
        strict = read_squad(path, is_training=is_training)
    except ValueError as e:
        assert str(e).startswith(path)
        strict = None
    finally:
        tf.io.gfile.remove(path)  # writing does not truncate a ram:// file
    if strict is not None:  # nothing bad: both modes read the same questions
        assert strict == skipped
    ids = [e.qas_id for e in skipped]
    assert len(set(ids)) == len(ids)
    for example in skipped:
        assert isinstance(example.is_impossible, bool) and all(isinstance(a, str) and a.strip() for a in example.answers)
        if example.is_impossible:
            assert example.answers == [] and example.answer_start == -1
        elif is_training:
            text, start = example.answers[0], example.answer_start
            assert start >= 0 and example.context[start : start + len(text)] == text
