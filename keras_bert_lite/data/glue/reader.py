"""Reading GLUE TSV files (tab separated, no quoting, as distributed), and your own CSV or TSV
files of labelled texts (`read_classification_file`), into `ClassificationData` (examples: the
`glue` package docstring and `ClassificationData`'s)."""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from keras_bert_lite.config import read_bytes
from keras_bert_lite.data.bad_input import BadRecords
from keras_bert_lite.data.glue.tasks import Column, GlueTask, get_glue_task


class ClassificationExample(NamedTuple):
    """One example of `ClassificationData` (see its attributes): `id`, `text_a`, `text_b` (None for one
    sentence) and `label` (an int class id, a float value, or None), in the field order of the original
    `run_classifier.py`'s `InputExample`."""

    id: str
    text_a: str
    text_b: str | None
    label: int | float | None


@dataclasses.dataclass
class ClassificationData:
    """Texts and labels of a sentence(-pair) task, in memory, column by column.

    Iterating yields one `ClassificationExample` per example, in file order.

    Attributes:
        text_a: first sentences.
        text_b: second sentences (pair tasks) or None.
        labels: int32 class ids [N], float32 values [N] (regression) or None (unlabelled).
        ids: an id per example (the file's `index` column, else "line N").

    Example:

        >>> data = ClassificationData(["a warm film", "dull"], None, np.array([1, 0], "int32"),
        ...                           ["line 2", "line 3"])
        >>> [(example.text_a, example.label) for example in data]
        [('a warm film', 1), ('dull', 0)]
    """

    text_a: list[str]
    text_b: list[str] | None
    labels: np.ndarray | None
    ids: list[str]

    def __len__(self) -> int:
        return len(self.text_a)

    def __iter__(self) -> Iterator[ClassificationExample]:
        text_b = [None] * len(self) if self.text_b is None else self.text_b
        labels = [None] * len(self) if self.labels is None else self.labels.tolist()
        return map(ClassificationExample, self.ids, self.text_a, text_b, labels)


def _column_index(column: Column, header: list[str] | None, path: str) -> int:
    if isinstance(column, int):
        return column
    if header is None or column not in header:
        raise ValueError(f"{path}, line 1: header {header} has no column {column!r}.")
    return header.index(column)


def read_glue_tsv(
    path: str | os.PathLike, task: GlueTask | str, split: str = "train", on_error: str = "raise"
) -> ClassificationData:
    """Reads a GLUE TSV file (tab separated, no quoting, as distributed).

    Args:
        path: the .tsv file (local or any `tf.io.gfile` path).
        task: a `GlueTask` or its name.
        split: "train" or "dev" (labelled, the task's train/dev layout) or "test" (unlabelled,
            the test layout with a header and an `index` column).
        on_error: "raise" at the first bad line, or "skip" it with a logged warning. Bad lines:
            too few columns, a label that is not one of the task's labels (or not a finite
            number for regression), text that is not valid UTF-8. Empty lines are ignored; a
            line of spaces is a record (and a bad one, without its label column).

    Returns:
        `ClassificationData` (labels None for the test split).

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file and line of a bad record (on_error="raise"), a header
            without the task's columns, or a file with no usable example.
    """
    task = get_glue_task(task) if isinstance(task, str) else task
    if split not in ("train", "dev", "test"):
        raise ValueError(f"split must be 'train', 'dev' or 'test', got {split!r}.")
    path, data = read_bytes(path, "GLUE file")
    raw_lines = data.splitlines()
    bad = BadRecords(path, on_error)
    labelled = split != "test"
    has_header = task.has_header or not labelled
    header = None
    if has_header:
        if not raw_lines:
            raise ValueError(f"{path}: empty file, expected a header line.")
        header = raw_lines[0].decode("utf-8-sig", errors="replace").split("\t")
    text_columns = task.text_columns if labelled else (task.test_text_columns or task.text_columns)
    text_idx = [_column_index(c, header, path) for c in text_columns]
    label_idx = _column_index(task.label_column, header, path) if labelled else None
    id_idx = header.index("index") if header and "index" in header else None
    # Columns every line must have: texts, label and id (a short line is a bad record, not an IndexError).
    used = [*text_idx, *(i for i in (label_idx, id_idx) if i is not None)]
    needed = max(i if i >= 0 else -i - 1 for i in used) + 1

    texts: list[list[str]] = [[] for _ in text_idx]
    labels, ids = [], []
    for line_number, raw in enumerate(raw_lines[1:] if has_header else raw_lines, start=2 if has_header else 1):
        if not raw:  # an empty line; a line of spaces is a (short) record
            continue
        try:
            fields = raw.decode("utf-8-sig" if line_number == 1 else "utf-8").split("\t")
        except UnicodeDecodeError as e:
            bad(line_number, f"not valid UTF-8 ({e.reason} at byte {e.start}).")
            continue
        if len(fields) < needed:
            bad(line_number, f"expected at least {needed} tab-separated columns, found {len(fields)}.")
            continue
        if labelled:
            label = _parse_label(fields[label_idx].strip(), task)
            if isinstance(label, str):
                bad(line_number, label)
                continue
            labels.append(label)
        for column, index in zip(texts, text_idx):
            column.append(fields[index])
        ids.append(fields[id_idx] if id_idx is not None else f"line {line_number}")
    if not ids:
        raise ValueError(f"{path}: no usable examples ({len(bad.messages)} bad lines skipped).")
    label_dtype = "float32" if task.is_regression else "int32"
    return ClassificationData(
        text_a=texts[0],
        text_b=texts[1] if len(texts) > 1 else None,
        labels=np.asarray(labels, label_dtype) if labelled else None,
        ids=ids,
    )


def _parse_label(value: str, task: GlueTask) -> int | float | str:
    """The label as a class id or float; a string describing the problem if it is bad."""
    if task.is_regression:
        try:
            number = float(value)
        except ValueError:
            return f"label {value!r} is not a number."
        return number if math.isfinite(number) else f"label {value!r} is not a finite number."
    if value not in task.labels:
        return f"label {value!r} is not one of {list(task.labels)}."
    return task.labels.index(value)


def read_classification_file(
    path: str | os.PathLike,
    text_columns: Sequence[str],
    label_column: str | None = None,
    labels: Sequence[str] | None = None,
    on_error: str = "raise",
) -> tuple[ClassificationData, tuple[str, ...] | None]:
    """Reads your own labelled texts: a CSV or TSV file with a header line naming its columns.

    A `.csv` file is comma separated with quoted fields where needed (as Excel and pandas write
    it); any other is tab separated (quotes as in Excel's tab-separated files). Labels are
    strings (any column values), made class ids by their place in `labels`.

    Args:
        path: the file (local or any `tf.io.gfile` path), UTF-8.
        text_columns: the header names of the text (one column) or the text pair (two).
        label_column: the header name of the labels; None for unlabelled texts.
        labels: the label values in class-id order; None takes the file's distinct labels, sorted.
        on_error: "raise" at the first bad line, or "skip" it with a logged warning. Bad lines:
            too few columns, an empty label or one not in `labels`.

    Returns:
        (data, labels): `ClassificationData` (int32 class ids, ids "line N"), and the labels in
        class-id order (None without `label_column`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file (and line) of text that is not UTF-8, a header without a
            named column, a bad line (on_error="raise"), or a file with no usable example.
    """
    if not 1 <= len(text_columns) <= 2:
        raise ValueError(f"text_columns must name one column (texts) or two (text pairs), got {list(text_columns)}.")
    path, data = read_bytes(path, "Classification file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}).") from None
    rows = csv.reader(io.StringIO(text, newline=""), csv.excel if path.lower().endswith(".csv") else csv.excel_tab)
    header = next(rows, None)
    if not header:
        raise ValueError(f"{path}: empty file, expected a header line naming the columns.")
    columns = [*text_columns, *([label_column] if label_column is not None else [])]
    for column in columns:
        if column not in header:
            raise ValueError(f"{path}, line 1: the header {header} has no column {column!r}.")
    text_idx = [header.index(column) for column in text_columns]
    label_idx = header.index(label_column) if label_column is not None else None
    needed = max(header.index(column) for column in columns) + 1
    bad = BadRecords(path, on_error)
    texts: list[list[str]] = [[] for _ in text_idx]
    values, ids = [], []
    for row in rows:
        line = rows.line_num
        if not row:
            continue
        if len(row) < needed:
            bad(line, f"expected at least {needed} columns, found {len(row)}.")
            continue
        if label_idx is not None:
            value = row[label_idx].strip()
            if not value or (labels is not None and value not in labels):
                bad(line, f"label {value!r} is not one of {list(labels)}." if value else "empty label.")
                continue
            values.append(value)
        for column, index in zip(texts, text_idx):
            column.append(row[index])
        ids.append(f"line {line}")
    if not ids:
        raise ValueError(f"{path}: no usable examples ({len(bad.messages)} bad lines skipped).")
    if label_idx is not None and labels is None:
        labels = sorted(set(values))
    class_ids = None if label_idx is None else np.array([list(labels).index(v) for v in values], "int32")
    return (ClassificationData(texts[0], texts[1] if len(texts) > 1 else None, class_ids, ids),
            None if labels is None else tuple(labels))
