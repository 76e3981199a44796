"""Checks that pre-training TFRecord files are readable and of the expected shape, before training.

A data file written with another `--max_seq_length`, `--max_predictions_per_seq` or vocabulary,
a file that is not a TFRecord file, or a record that is not a `tf.train.Example` is reported
here, naming the file, before a launcher builds a model or starts a week-long run.

Example:

    >>> files = check_pretraining_files("data/train-*.tfrecord", seq_length=128,
    ...                                 max_predictions_per_seq=20, vocab_size=30522)
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence

import tensorflow as tf
from absl import logging
from google.protobuf.message import DecodeError

from keras_bert_lite.data.corpora import expand_file_patterns
from keras_bert_lite.data.pretraining.format import record_problem


def check_pretraining_files(
    file_patterns: str | Sequence[str],
    seq_length: int,
    max_predictions_per_seq: int,
    vocab_size: int | None = None,
) -> list[str]:
    """Reads the first record of every matched file and checks it against the expected shape.

    Only the first record of each file is read, so the check is cheap even for thousands of
    shards on `gs://`; the reader checks every later record as it goes (`pretraining_dataset`).

    Args:
        file_patterns: a glob, a comma-separated list of globs, or a list of them.
        seq_length: max_seq_length the files should have been written with.
        max_predictions_per_seq: max_predictions_per_seq they should have been written with.
        vocab_size: when given, every id of the first records must be below it.

    Returns:
        The matched files that hold at least one record, in pattern order. Empty files are left
        out with a warning (a writer with more shards than examples leaves some empty).

    Raises:
        FileNotFoundError: a pattern matches no file.
        ValueError: a bad argument; a file that cannot be read as a TFRecord file, whose first
            record is not a `tf.train.Example`, or whose first record has a missing feature, a
            feature of the wrong length or type, or a value out of range (the message names the
            file, the feature and the value); or no file holds any record.
    """
    arguments = {"seq_length": seq_length, "max_predictions_per_seq": max_predictions_per_seq}
    if vocab_size is not None:
        arguments["vocab_size"] = vocab_size
    for name, value in arguments.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}.")
    files = expand_file_patterns(file_patterns)
    with_records, empty = [], []
    for path in files:
        try:
            records = [record.numpy() for record in tf.data.TFRecordDataset(path).take(1)]
        except tf.errors.OpError as e:
            raise ValueError(f"{path}: cannot be read as a TFRecord file: {op_error_text(e)}.") from None
        if not records:
            empty.append(path)
            continue
        try:
            example = tf.train.Example.FromString(records[0])
        except DecodeError as e:
            raise ValueError(f"{path}, record 1: not a tf.train.Example ({e}).") from None
        problem = record_problem(example, seq_length, max_predictions_per_seq, vocab_size)
        if problem:
            raise ValueError(f"{path}, record 1: {problem}.")
        with_records.append(path)
    if not with_records:
        raise ValueError(f"No pre-training records in any of the {len(files)} input file(s): {', '.join(files)}.")
    for path in empty:
        logging.warning("Pre-training file %s holds no record; it is left out.", path)
    return with_records


def op_error_text(error: tf.errors.OpError) -> str:
    """A TensorFlow error's own message, without the function-node prefix and op suffix."""
    text = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", error.message)
    return re.sub(r"\s*\[Op:\w+\].*$", "", text, flags=re.DOTALL).strip()
