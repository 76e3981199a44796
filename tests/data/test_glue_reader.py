"""GLUE TSV reading (checked against the original BERT processors), iteration and bad input."""

import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keras_bert_lite.data.glue.reader import ClassificationData, ClassificationExample, read_glue_tsv
from keras_bert_lite.data.glue.tasks import GLUE_TASKS, get_glue_task

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "glue"


@pytest.fixture(scope="module")
def original(import_original_bert):
    return import_original_bert("run_classifier")


@pytest.mark.parametrize(
    "task, folder, split, file, processor",
    [
        ("mrpc", "MRPC", "train", "train.tsv", "MrpcProcessor"),
        ("mrpc", "MRPC", "dev", "dev.tsv", "MrpcProcessor"),
        ("mnli", "MNLI", "train", "train.tsv", "MnliProcessor"),
        ("mnli", "MNLI", "dev", "dev_matched.tsv", "MnliProcessor"),
        ("cola", "CoLA", "train", "train.tsv", "ColaProcessor"),
    ],
)
def test_matches_the_original_processors(original, task, folder, split, file, processor):
    data = read_glue_tsv(FIXTURES / folder / file, task, split)
    reference_processor = getattr(original, processor)()
    getter = reference_processor.get_train_examples if split == "train" else reference_processor.get_dev_examples
    reference = getter(str(FIXTURES / folder))
    labels = reference_processor.get_labels()
    assert data.text_a == [e.text_a for e in reference]
    assert data.text_b == ([e.text_b for e in reference] if reference[0].text_b is not None else None)
    assert data.labels.tolist() == [labels.index(e.label) for e in reference]
    assert list(GLUE_TASKS[task].labels) == labels


def test_test_split_has_no_labels_and_keeps_index(original):
    data = read_glue_tsv(FIXTURES / "MRPC" / "test.tsv", "mrpc", "test")
    reference = original.MrpcProcessor().get_test_examples(str(FIXTURES / "MRPC"))
    assert data.labels is None and data.ids == ["0", "1"]
    assert list(zip(data.text_a, data.text_b)) == [(e.text_a, e.text_b) for e in reference]


def test_regression_and_single_sentence_layouts():
    sts = read_glue_tsv(FIXTURES / "STS-B" / "train.tsv", "sts-b")
    assert sts.labels.dtype == np.float32 and sts.labels.tolist() == pytest.approx([5.0, 3.8, 0.5, 4.2])
    assert sts.text_b[1] == "A man is playing a flute."
    sst = read_glue_tsv(FIXTURES / "SST-2" / "train.tsv", "SST-2")
    assert sst.text_b is None and sst.labels.tolist() == [1, 0, 1, 0]
    assert get_glue_task("STS-B").num_classes == 1 and get_glue_task("mnli").num_classes == 3


def _write(tmp_path, text):
    path = tmp_path / "train.tsv"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def test_label_outside_the_classes_is_reported_with_file_and_line(tmp_path):
    path = _write(tmp_path, "sentence\tlabel\ngood\t1\nbad\t2\nfine\t0\n")
    with pytest.raises(ValueError, match=r"train\.tsv, line 3: label '2' is not one of \['0', '1'\]"):
        read_glue_tsv(path, "sst2")
    data = read_glue_tsv(path, "sst2", on_error="skip")
    assert data.text_a == ["good", "fine"] and data.labels.tolist() == [1, 0]


@pytest.mark.parametrize(
    "content, message",
    [
        ("sentence\tlabel\njust one column\n", r"line 2: expected at least 2 tab-separated columns, found 1"),
        (b"sentence\tlabel\nbad \xff byte\t1\n", r"line 2: not valid UTF-8"),
        ("sentence\tscore\nx\t1\n", r"line 1: header \['sentence', 'score'\] has no column 'label'"),
    ],
)
def test_malformed_lines(tmp_path, content, message):
    with pytest.raises(ValueError, match=message):
        read_glue_tsv(_write(tmp_path, content), "sst2")


def test_regression_label_must_be_a_number(tmp_path):
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    path = _write(tmp_path, header + "0\tg\tf\t2012\t1\tn\tn\ta\tb\tfive\n1\tg\tf\t2012\t2\tn\tn\tc\td\tnan\n")
    with pytest.raises(ValueError, match="line 2: label 'five' is not a number"):
        read_glue_tsv(path, "stsb")
    with pytest.raises(ValueError, match="no usable examples"):
        read_glue_tsv(path, "stsb", on_error="skip")


def test_missing_file_and_unknown_task(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.tsv"):
        read_glue_tsv(tmp_path / "nothing.tsv", "sst2")


def test_iterating_yields_examples_in_file_order():
    data = read_glue_tsv(FIXTURES / "MRPC" / "train.tsv", "mrpc")
    examples = list(data)
    assert len(examples) == len(data) and all(isinstance(e, ClassificationExample) for e in examples)
    assert [(e.text_a, e.text_b, e.label, e.id) for e in examples] == list(
        zip(data.text_a, data.text_b, data.labels.tolist(), data.ids)
    )
    assert type(examples[0].label) is int
    test = list(read_glue_tsv(FIXTURES / "MRPC" / "test.tsv", "mrpc", "test"))
    assert [e.id for e in test] == ["0", "1"] and {e.label for e in test} == {None}
    single = list(ClassificationData(["x"], None, np.array([0.5], "float32"), ["a"]))
    assert single == [ClassificationExample("a", "x", None, 0.5)]


def test_short_row_before_the_id_column_is_a_bad_line(tmp_path):
    """The id column counts among the columns a line needs (it used to raise IndexError)."""
    path = _write(tmp_path, "sentence\tlabel\tindex\ngood\t1\t7\nshort\t0\nfine\t0\t9\n")
    with pytest.raises(ValueError, match=r"train\.tsv, line 3: expected at least 3 tab-separated columns, found 2"):
        read_glue_tsv(path, "sst2")
    data = read_glue_tsv(path, "sst2", on_error="skip")
    assert data.text_a == ["good", "fine"] and data.ids == ["7", "9"]


def test_byte_order_mark_before_the_header(tmp_path):
    path = _write(tmp_path, b"\xef\xbb\xbfsentence\tlabel\ngood\t1\n")
    assert read_glue_tsv(path, "sst2").text_a == ["good"]


# Property-based: generated files in each layout, read exactly; one bad line named, or skipped alone.
_TEXT = st.text(st.characters(blacklist_characters="\t\n\r", blacklist_categories=("Cs",)), max_size=30)
_LAYOUTS = {  # task -> (header or None, builds the line's fields from (text_a, text_b, label))
    "sst2": ("sentence\tlabel", lambda a, b, label: [a, label]),
    "mrpc": ("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", lambda a, b, label: [label, "1", "2", a, b]),
    "cola": (None, lambda a, b, label: ["src", label, "*", a]),
    "stsb": (
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore",
        lambda a, b, label: ["7", "g", "f", "2012", "1", "s", "s", a, b, label],
    ),
}
_SETTINGS = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck))


@st.composite
def glue_files(draw):
    """(task, lines as bytes, expected rows (text_a, text_b, label) per line, first data line number)."""
    task = draw(st.sampled_from(sorted(_LAYOUTS)))
    header, fields = _LAYOUTS[task]
    spec = get_glue_task(task)
    rows = []
    for _ in range(draw(st.integers(1, 12))):
        label = draw(st.floats(0, 5, allow_nan=False)) if spec.is_regression else draw(st.sampled_from(spec.labels))
        rows.append((draw(_TEXT), draw(_TEXT) if spec.is_pair else None, label))
    lines = [("\t".join(fields(a, b, repr(label) if spec.is_regression else label))).encode() for a, b, label in rows]
    if header:
        lines.insert(0, header.encode())
    return task, lines, rows, 2 if header else 1


def _check(data, rows, first_line, task):
    spec = get_glue_task(task)
    assert data.text_a == [a for a, _, _ in rows]
    assert data.text_b == (None if not spec.is_pair else [b for _, b, _ in rows])
    expected = [label if spec.is_regression else spec.labels.index(label) for _, _, label in rows]
    assert data.labels.tolist() == pytest.approx(expected)


@_SETTINGS
@given(glue_files())
def test_generated_files_are_read_exactly(tmp_path_factory, generated):
    task, lines, rows, first_line = generated
    path = tmp_path_factory.mktemp("glue") / "train.tsv"
    path.write_bytes(b"\n".join(lines) + b"\n")
    data = read_glue_tsv(path, task)
    _check(data, rows, first_line, task)
    if task != "stsb":
        assert data.ids == [f"line {first_line + i}" for i in range(len(rows))]


@_SETTINGS
@given(glue_files(), st.data(), st.sampled_from(["short", "label", "utf8"]))
def test_a_bad_line_is_named_or_skipped_alone(tmp_path_factory, generated, data, kind):
    task, lines, rows, first_line = generated
    bad = data.draw(st.integers(0, len(rows) - 1), label="bad row")
    index = bad + first_line - 1
    if kind == "short":
        lines[index] = lines[index].split(b"\t")[0] or data.draw(st.sampled_from([b"x", b" ", b"\x0b"]))
    elif kind == "label":
        fields = _LAYOUTS[task][1]("a", "b", "not-a-label")
        lines[index] = "\t".join(fields).encode()
    else:
        lines[index] = lines[index] + b"\xff"
    path = tmp_path_factory.mktemp("glue") / "bad.tsv"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(ValueError, match=rf"bad\.tsv, line {bad + first_line}: "):
        read_glue_tsv(path, task)
    if len(rows) > 1:
        _check(read_glue_tsv(path, task, on_error="skip"), rows[:bad] + rows[bad + 1 :], first_line, task)


def test_your_own_csv_and_tsv_files_with_string_labels(tmp_path):
    from keras_bert_lite.data.glue import read_classification_file

    pairs = tmp_path / "pairs.csv"  # quoted fields with commas and a line break, as pandas writes them
    pairs.write_text('id,first,second,same\n1,"Ann, at home","Ann is\nhome",yes\n2,rain,"sun, all day",no\n\n'
                     '3,snow,ice,yes\n')
    data, labels = read_classification_file(pairs, ["first", "second"], "same")
    assert labels == ("no", "yes")  # the file's labels, sorted
    assert data.text_a == ["Ann, at home", "rain", "snow"] and data.text_b == ["Ann is\nhome", "sun, all day", "ice"]
    assert data.labels.tolist() == [1, 0, 1] and data.ids == ["line 3", "line 4", "line 6"]  # lines where rows end
    tsv = tmp_path / "reviews.tsv"
    tsv.write_text("sentence\tlabel\na warm film\tpos\ndull\tneg\nso-so\t\nfine\tmeh\n")
    with pytest.raises(ValueError, match=r"reviews.tsv, line 4: empty label"):
        read_classification_file(tsv, ["sentence"], "label")
    data, labels = read_classification_file(tsv, ["sentence"], "label", labels=["neg", "pos"], on_error="skip")
    assert labels == ("neg", "pos") and data.labels.tolist() == [1, 0] and data.text_b is None
    unlabelled, labels = read_classification_file(tsv, ["sentence"])
    assert labels is None and unlabelled.labels is None and len(unlabelled) == 4
    with pytest.raises(ValueError, match=r"line 1: the header \['sentence', 'label'\] has no column 'text'"):
        read_classification_file(tsv, ["text"], "label")
    with pytest.raises(FileNotFoundError, match="Classification file not found: .*none.csv"):
        read_classification_file(tmp_path / "none.csv", ["text"], "label")
