"""The GLUE tasks: where each keeps its texts and labels in the distributed TSV files, its labels, metrics.

Example:

    >>> task = get_glue_task("MRPC")
    >>> task.text_columns, task.labels, task.metric_names
    (('#1 String', '#2 String'), ('0', '1'), ('f1', 'accuracy'))
"""

from __future__ import annotations

import dataclasses

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


def get_glue_task(name: str) -> GlueTask:
    """The `GlueTask` called `name` (case-insensitive; "sts-b"/"sst-2" spellings accepted)."""
    key = name.lower().replace("-", "")
    if key not in GLUE_TASKS:
        raise ValueError(f"Unknown GLUE task {name!r}; expected one of {sorted(GLUE_TASKS)}.")
    return GLUE_TASKS[key]
