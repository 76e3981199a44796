"""GLUE sentence(-pair) classification data: the real TSV layouts, tf.data pipelines, metrics.

Example:

    >>> task = GLUE_TASKS["mrpc"]
    >>> train = read_glue_tsv("glue_data/MRPC/train.tsv", task)
    >>> ds = classification_dataset(train, BertPreprocessor("vocab.txt"), batch_size=32,
    ...                             is_training=True, num_classes=task.num_classes)
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.bad_input import BadRecords

Column = str | int


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """Where a GLUE task keeps its texts and labels, and what the labels are.

    Args:
        name: task name, e.g. "mrpc".
        text_columns: one (single sentence) or two (pair) columns: header names, or 0-based
            indices for files without a header.
        label_column: header name or index of the label.
        labels: label strings in class-id order; None for a regression task (float labels).
        has_header: whether train/dev files start with a header line.
        dev_file: file name of the labelled evaluation split.
        test_file: file name of the unlabelled test split (always with a header).
        test_text_columns: header names of the texts in the test file.
        metric_names: metrics of `glue_metrics` reported for the task, the first is the main one.
    """

    name: str
    text_columns: tuple[Column, ...]
    label_column: Column
    labels: tuple[str, ...] | None
    has_header: bool = True
    dev_file: str = "dev.tsv"
    test_file: str = "test.tsv"
    test_text_columns: tuple[str, ...] | None = None
    metric_names: tuple[str, ...] = ("accuracy",)

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_classes(self) -> int:
        """Number of model outputs: the label count, or 1 for regression."""
        return 1 if self.labels is None else len(self.labels)

    @property
    def is_pair(self) -> bool:
        return len(self.text_columns) == 2


_BINARY = ("0", "1")
_NLI_2 = ("entailment", "not_entailment")

GLUE_TASKS: dict[str, GlueTask] = {
    task.name: task
    for task in (
        GlueTask("cola", (3,), 1, _BINARY, has_header=False, test_text_columns=("sentence",),
                 metric_names=("matthews_corrcoef", "accuracy")),
        GlueTask("sst2", ("sentence",), "label", _BINARY),
        GlueTask("mrpc", ("#1 String", "#2 String"), "Quality", _BINARY, metric_names=("f1", "accuracy")),
        GlueTask("stsb", ("sentence1", "sentence2"), "score", None, metric_names=("pearson", "spearman")),
        GlueTask("qqp", ("question1", "question2"), "is_duplicate", _BINARY, metric_names=("f1", "accuracy")),
        GlueTask("mnli", ("sentence1", "sentence2"), "gold_label", ("contradiction", "entailment", "neutral"),
                 dev_file="dev_matched.tsv", test_file="test_matched.tsv"),
        GlueTask("mnli_mismatched", ("sentence1", "sentence2"), "gold_label",
                 ("contradiction", "entailment", "neutral"),
                 dev_file="dev_mismatched.tsv", test_file="test_mismatched.tsv"),
        GlueTask("qnli", ("question", "sentence"), "label", _NLI_2),
        GlueTask("rte", ("sentence1", "sentence2"), "label", _NLI_2),
        GlueTask("wnli", ("sentence1", "sentence2"), "label", _BINARY),
    )
}


@dataclasses.dataclass
class ClassificationData:
    """Texts and labels of a sentence(-pair) task, in memory.

    Attributes:
        text_a: first sentences.
        text_b: second sentences (pair tasks) or None.
        labels: int32 class ids [N], float32 values [N] (regression) or None (unlabelled).
        ids: an id per example (the file's `index` column, else "line N").
    """

    text_a: list[str]
    text_b: list[str] | None
    labels: np.ndarray | None
    ids: list[str]

    def __len__(self) -> int:
        return len(self.text_a)


def get_glue_task(name: str) -> GlueTask:
    """The `GlueTask` called `name` (case-insensitive; "sts-b"/"sst-2" spellings accepted)."""
    key = name.lower().replace("-", "")
    if key not in GLUE_TASKS:
        raise ValueError(f"Unknown GLUE task {name!r}; expected one of {sorted(GLUE_TASKS)}.")
    return GLUE_TASKS[key]


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
            number for regression), text that is not valid UTF-8.

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
    path = os.fspath(path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"GLUE file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        raw_lines = f.read().splitlines()
    bad = BadRecords(path, on_error)
    labelled = split != "test"
    has_header = task.has_header or not labelled
    header = None
    if has_header:
        if not raw_lines:
            raise ValueError(f"{path}: empty file, expected a header line.")
        header = raw_lines[0].decode("utf-8", errors="replace").split("\t")
    text_columns = task.text_columns if labelled else (task.test_text_columns or task.text_columns)
    text_idx = [_column_index(c, header, path) for c in text_columns]
    label_idx = _column_index(task.label_column, header, path) if labelled else None
    id_idx = header.index("index") if header and "index" in header else None
    needed = max(text_idx + ([label_idx] if label_idx is not None else [])) + 1

    texts: list[list[str]] = [[] for _ in text_idx]
    labels, ids = [], []
    for line_number, raw in enumerate(raw_lines[1:] if has_header else raw_lines, start=2 if has_header else 1):
        if not raw.strip():
            continue
        try:
            fields = raw.decode("utf-8").split("\t")
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


def check_labels(labels: np.ndarray, num_classes: int) -> None:
    """Raises ValueError naming the first example whose class id is outside [0, num_classes).

    For num_classes=1 (regression) labels must be finite numbers instead.
    """
    labels = np.asarray(labels)
    if num_classes == 1:
        bad = np.flatnonzero(~np.isfinite(labels.astype("float64")))
        if bad.size:
            raise ValueError(f"Example {bad[0]}: regression label {labels[bad[0]]!r} is not finite.")
        return
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"Class labels must be integers, got dtype {labels.dtype}.")
    bad = np.flatnonzero((labels < 0) | (labels >= num_classes))
    if bad.size:
        raise ValueError(
            f"Example {bad[0]}: label {labels[bad[0]]} is outside the class range [0, {num_classes}) "
            f"({bad.size} such labels)."
        )


def classification_dataset(
    data: ClassificationData,
    preprocessor,
    batch_size: int,
    is_training: bool,
    num_classes: int | None = None,
    seed: int | None = None,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """A tf.data pipeline of packed BERT inputs (tokenized in the graph) and labels.

    Args:
        data: the examples.
        preprocessor: a `BertPreprocessor` (strings, or a pair of strings, to the three inputs).
        batch_size: examples per batch.
        is_training: shuffle (with `seed`) and repeat-free batches for `model.fit`.
        num_classes: when given, labels are checked to lie in [0, num_classes) (or to be finite
            for num_classes=1) before anything runs.
        seed: shuffle seed.
        drop_remainder: drop the last partial batch.

    Returns:
        Dataset of `(features, labels)` (labels int32 or float32 [batch]), or of `features` only
        when `data.labels` is None.
    """
    texts = (data.text_a,) if data.text_b is None else (data.text_a, data.text_b)
    texts = tuple(tf.constant(t, tf.string) for t in texts)
    if data.labels is not None:
        if num_classes is not None:
            check_labels(data.labels, num_classes)
        ds = tf.data.Dataset.from_tensor_slices((texts, data.labels))
    else:
        ds = tf.data.Dataset.from_tensor_slices((texts,))
    if is_training:
        ds = ds.shuffle(len(data), seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)

    def pack(text, *labels):
        features = preprocessor(text[0] if len(text) == 1 else tuple(text))
        return (features, *labels) if labels else features

    return ds.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


# ----------------------------------------------------------------------------------- metrics
def _binary_counts(labels: np.ndarray, predictions: np.ndarray) -> tuple[int, int, int, int]:
    tp = int(np.sum((predictions == 1) & (labels == 1)))
    tn = int(np.sum((predictions == 0) & (labels == 0)))
    fp = int(np.sum((predictions == 1) & (labels == 0)))
    fn = int(np.sum((predictions == 0) & (labels == 1)))
    return tp, tn, fp, fn


def f1_binary(labels: Sequence[int], predictions: Sequence[int]) -> float:
    """F1 of the positive class 1 (GLUE's MRPC/QQP F1); 0 when there is no true positive."""
    tp, _, fp, fn = _binary_counts(np.asarray(labels), np.asarray(predictions))
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def matthews_corrcoef(labels: Sequence[int], predictions: Sequence[int]) -> float:
    """Matthews correlation of binary labels (CoLA's metric); 0 when undefined."""
    tp, tn, fp, fn = _binary_counts(np.asarray(labels), np.asarray(predictions))
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return 0.0 if denominator == 0 else (tp * tn - fp * fn) / denominator


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation coefficient."""
    x, y = np.asarray(x, "float64"), np.asarray(y, "float64")
    x, y = x - x.mean(), y - y.mean()
    return float(np.sum(x * y) / math.sqrt(np.sum(x * x) * np.sum(y * y)))


def _ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share their average rank."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), "float64")
    ranks[order] = np.arange(1, len(x) + 1)
    for value in np.unique(x):
        tied = x == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (Pearson of average ranks)."""
    return pearson(_ranks(np.asarray(x, "float64")), _ranks(np.asarray(y, "float64")))


def glue_metrics(task: GlueTask | str, labels: Sequence, predictions: Sequence) -> dict[str, float]:
    """The task's GLUE metrics.

    Args:
        task: the task (its `metric_names` decide which metrics are computed).
        labels: gold class ids (or values for regression) [N].
        predictions: predicted class ids (or values) [N].

    Returns:
        dict metric name -> value (fractions, not percentages).
    """
    task = get_glue_task(task) if isinstance(task, str) else task
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if labels.shape != predictions.shape:
        raise ValueError(f"labels {labels.shape} and predictions {predictions.shape} differ in shape.")
    functions = {
        "accuracy": lambda: float(np.mean(labels == predictions)),
        "f1": lambda: f1_binary(labels, predictions),
        "matthews_corrcoef": lambda: matthews_corrcoef(labels, predictions),
        "pearson": lambda: pearson(labels, predictions),
        "spearman": lambda: spearman(labels, predictions),
    }
    return {name: functions[name]() for name in task.metric_names}
