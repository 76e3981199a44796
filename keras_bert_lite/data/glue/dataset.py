"""Sentence(-pair) classification examples as a `tf.data` pipeline of packed BERT inputs and labels
(example: the `glue` package docstring)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.glue.reader import ClassificationData


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
    texts = tuple(tf.constant(t, tf.string) for t in (data.text_a, data.text_b) if t is not None)
    if data.labels is not None and num_classes is not None:
        check_labels(data.labels, num_classes)
    ds = tf.data.Dataset.from_tensor_slices((texts,) if data.labels is None else (texts, data.labels))
    if is_training:
        ds = ds.shuffle(len(data), seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)

    def pack(text, *labels):
        features = preprocessor(text[0] if len(text) == 1 else tuple(text))
        return (features, *labels) if labels else features

    return ds.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
