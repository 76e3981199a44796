"""Every record of one pre-training TFRecord file, read, parsed and checked inside the `tf.data` graph.

TensorFlow's own errors for bad data name neither the file nor the record: a truncated or
corrupted file raises `DataLossError: corrupted record at 244`, a record that is not a
`tf.train.Example` fails the whole batch's parse. Here each file is read on its own: parse
errors and read errors end the file's stream (`ignore_errors`, which logs TensorFlow's message),
and a check after the last record finds what was lost — a record number that was skipped, or
fewer bytes consumed than the file holds — and raises one `InvalidArgumentError` naming the file
and the record. The same check reports features of the wrong length and values outside
`value_ranges` (positions beyond the sequence, labels other than 0/1, ids beyond the
vocabulary). Records are parsed and checked in chunks, and messages are only formatted once
something is wrong, so valid data pays for a few vectorized comparisons per chunk.

Example:

    >>> path = "train.tfrecord"
    >>> records = read_checked_records(tf.constant(path), tf.constant(tf.io.gfile.stat(path).length),
    ...                                seq_length=128, max_predictions_per_seq=20)
    >>> next(iter(records.batch(32))).shape  # the features of 32 records, one row each
    TensorShape([32, 445])
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert_lite.data.pretraining.format import (
    FLOAT_FEATURE,
    feature_lengths,
    length_hint,
    pretraining_feature_spec,
    value_ranges,
)

# Bytes around every record of a TFRecord file: its length (8), the length's CRC (4), the data's CRC (4).
_RECORD_FRAMING_BYTES = 16
# Records parsed and checked together: per-record tf.data work is what a reader pays for, so
# records go through parsing and checks in chunks; a chunk is also the unit a parse error drops.
CHUNK_SIZE = 64


def read_checked_records(
    path: tf.Tensor,
    size: tf.Tensor,
    seq_length: int,
    max_predictions_per_seq: int,
    vocab_size: int | None = None,
) -> tf.data.Dataset:
    """The records of one (uncompressed) TFRecord file as checked, fixed-length features.

    Args:
        path: scalar string tensor, the file.
        size: scalar integer tensor, the file's size in bytes (to detect a file that ends early).
        seq_length, max_predictions_per_seq, vocab_size: as for `check_pretraining_files`.

    Returns:
        A dataset of records, each the int32 concatenation of its features in `FEATURES` order
        (`pretraining_dataset` batches and splits them). Iterating raises
        `InvalidArgumentError` with a message "<file>, record <n>: <problem>" at the first bad
        record (n counts from 1); a record that does not parse is located within its chunk
        ("records <a> to <b>").
    """
    lengths = feature_lengths(seq_length, max_predictions_per_seq)
    spec = {
        name: tf.io.RaggedFeature(feature.dtype, row_splits_dtype=tf.int32)
        for name, feature in pretraining_feature_spec(seq_length, max_predictions_per_seq).items()
    }

    def parse(indices: tf.Tensor, records: tf.Tensor):
        consumed = tf.reduce_sum(tf.cast(tf.strings.length(records), tf.int64) + _RECORD_FRAMING_BYTES)
        return indices, consumed, tf.io.parse_example(records, spec)

    chunks = (
        tf.data.TFRecordDataset(path)
        .enumerate()
        .ignore_errors(log_warning=True)  # a read error ends the file early; found below by its size
        .batch(CHUNK_SIZE)
        .map(parse)
        .ignore_errors(log_warning=True)  # a chunk that does not parse is dropped; found below by its numbers
    )
    # After the last chunk, an empty one numbered -1: the end-of-file checks run on it.
    end = tf.data.Dataset.from_tensors(parse(tf.constant([-1], tf.int64), tf.constant([], tf.string)))
    size = tf.cast(size, tf.int64)
    ranges = value_ranges(seq_length, vocab_size)

    def message(template: str, values: tuple) -> tf.Tensor:
        """The file's name, then `template` formatted with `values`."""
        return tf.strings.join([path, tf.strings.format(template, values)])

    def feature_problems(name: str, length: int, values: tf.RaggedTensor, indices: tf.Tensor) -> list:
        row_lengths = values.row_lengths()
        wrong_length = tf.not_equal(row_lengths, length)
        low, high, description = ranges[name]
        flat = values.flat_values
        out_of_range = tf.logical_or(flat < low, flat > high)
        if name == FLOAT_FEATURE:
            out_of_range = tf.logical_or(out_of_range, tf.not_equal(flat, tf.round(flat)))
        hint = length_hint(name, "{}")

        def length_message() -> tf.Tensor:
            lengths_found = tf.concat([row_lengths, [length]], 0)  # one more: safe on the end's empty chunk
            row = tf.argmax(tf.cast(tf.not_equal(lengths_found, length), tf.int32))
            found = lengths_found[row]
            template = f", record {{}}: feature {name} has {{}} values, expected {length}{hint}"
            return message(template, (indices[row] + 1, found, found) if hint else (indices[row] + 1, found))

        def value_message() -> tf.Tensor:
            # Built whenever any problem holds: safe on a feature without values.
            position = tf.argmax(tf.concat([tf.cast(out_of_range, tf.int32), [0]], 0), output_type=tf.int64)
            # A binary search over the row splits: `values.value_rowids()` traces some 70 ms of ops per
            # feature, which made building a reader (a tf.data pipeline) take about twice as long.
            row = tf.searchsorted(values.row_splits, [tf.cast(position, tf.int32)], side="right")[0] - 1
            row = tf.clip_by_value(row, 0, tf.size(indices) - 1)
            value = tf.concat([flat, tf.zeros([1], flat.dtype)], 0)[position]
            index = position - tf.cast(values.row_splits[row], tf.int64)
            template = f", record {{}}: feature {name} has value {{}} at index {{}}, {description}"
            return message(template, (indices[row] + 1, value, index))

        return [(tf.reduce_any(wrong_length), length_message), (tf.reduce_any(out_of_range), value_message)]

    def check(state, element):
        """The `scan` step: counts records and bytes, checks a chunk, raises at its first problem."""
        expected, consumed = state
        indices, chunk_bytes, features = element
        is_end = indices[0] < 0
        consumed += chunk_bytes
        # (condition, message) pairs; each message is a function called only when some condition holds.
        problems = [
            # A chunk that did not parse was dropped: the next one starts late.
            (
                tf.logical_and(tf.logical_not(is_end), tf.not_equal(indices[0], expected)),
                lambda: message(
                    ", records {} to {}: one of them is not a tf.train.Example with the pre-training "
                    "features (TensorFlow's error is logged above)",
                    (expected + 1, indices[0]),
                ),
            ),
            # The stream ended before the end of the file: a read error, or a last chunk that did not parse.
            (
                tf.logical_and(is_end, tf.not_equal(consumed, size)),
                lambda: message(
                    ", record {} (byte {} of {}): cannot be read as a tf.train.Example with the pre-training "
                    "features; the file is truncated or corrupted, or not pre-training data (TensorFlow's "
                    "error is logged above)",
                    (expected + 1, consumed, size),
                ),
            ),
        ]
        for name, length in lengths.items():
            problems += feature_problems(name, length, features[name], indices)
        conditions = tf.stack([bad for bad, _ in problems])

        def first_message() -> tf.Tensor:
            return tf.boolean_mask(tf.stack([make_message() for _, make_message in problems]), conditions)[0]

        found = tf.cond(tf.reduce_any(conditions), first_message, lambda: tf.constant(""))
        with tf.control_dependencies([tf.debugging.Assert(tf.equal(found, ""), [found])]):
            # Checked values fit in int32 (weights are 0 or 1): one tensor per record, so that
            # shuffling and batching move one tensor per record, not seven.
            packed = tf.concat(
                [
                    tf.cast(tf.reshape(features[name].flat_values, [-1, length]), tf.int32)
                    for name, length in lengths.items()
                ],
                axis=1,
            )
            state = (tf.where(is_end, expected, indices[-1] + 1), consumed)
        return state, (indices, packed)

    initial = (tf.constant(0, tf.int64), tf.constant(0, tf.int64))
    return (
        chunks.concatenate(end)
        .scan(initial, check)
        .filter(lambda indices, packed: indices[0] >= 0)
        .map(lambda indices, packed: packed)
        .unbatch()
    )

