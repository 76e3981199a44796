"""The GLUE metrics: accuracy, F1 of the positive class, Matthews correlation, Pearson and Spearman.

Example:

    >>> glue_metrics("mrpc", labels=[1, 0, 1, 1], predictions=[1, 0, 0, 1])
    {'f1': 0.8, 'accuracy': 0.75}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keras_bert_lite.data.glue.tasks import GlueTask, get_glue_task


def f1_binary(labels: Sequence[int], predictions: Sequence[int]) -> float:
    """F1 of the positive class 1 (GLUE's MRPC/QQP F1); 0 when there is no true positive."""
    labels, predictions = np.asarray(labels) == 1, np.asarray(predictions) == 1
    true_positives = np.sum(labels & predictions)
    return 0.0 if true_positives == 0 else float(2 * true_positives / (labels.sum() + predictions.sum()))


def matthews_corrcoef(labels: Sequence[int], predictions: Sequence[int]) -> float:
    """Matthews correlation of binary labels (CoLA's metric), which is their Pearson correlation; 0 when
    undefined (all labels or all predictions the same)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        correlation = pearson(labels, predictions)
    return 0.0 if np.isnan(correlation) else correlation


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation coefficient."""
    return float(np.corrcoef(np.asarray(x, "float64"), np.asarray(y, "float64"))[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share their average rank."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2)[inverse]


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
