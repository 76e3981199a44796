"""The BERT pre-training record: its features, their lengths, the values they may take.

One definition of Google's original `tf.train.Example` format (as `create_pretraining_data.py`
writes it and `run_pretraining.py` reads it), used by the writer, by the first-record checks of
`check_pretraining_files` and by the reader's in-graph checks, so all three agree.

Example:

    >>> record = serialize_example(input_ids=[101, 7, 102, 0], input_mask=[1, 1, 1, 0],
    ...                            segment_ids=[0, 0, 0, 0], masked_lm_positions=[1],
    ...                            masked_lm_ids=[7], masked_lm_weights=[1.0], next_sentence_label=0)
    >>> record_problem(tf.train.Example.FromString(record), seq_length=4, max_predictions_per_seq=1)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

# Features whose length is max_seq_length / max_predictions_per_seq; every feature but the
# weights is int64.
SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")
PREDICTION_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
FEATURES = (*SEQUENCE_FEATURES, *PREDICTION_FEATURES, "next_sentence_labels")
FLOAT_FEATURE = "masked_lm_weights"

# Ids are read as int32 by the model.
_INT32_MAX = 2**31 - 1


def feature_lengths(seq_length: int, max_predictions_per_seq: int) -> dict[str, int]:
    """Feature name -> number of values of each record."""
    lengths = dict.fromkeys(SEQUENCE_FEATURES, seq_length)
    lengths.update(dict.fromkeys(PREDICTION_FEATURES, max_predictions_per_seq))
    lengths["next_sentence_labels"] = 1
    return lengths


def value_ranges(seq_length: int, vocab_size: int | None = None) -> dict[str, tuple[int, int, str]]:
    """Feature name -> (lowest, highest, what a value must be in words): the whole values a record may hold.

    Ids must be below `vocab_size` when it is given (and fit in int32 always); masks, segment
    ids, weights and next-sentence labels are 0 or 1; masked positions lie inside the sequence
    (padding slots hold position 0, id 0 and weight 0). The words are for error messages.
    """
    ids = (0, _INT32_MAX, f"expected an id in [0, {_INT32_MAX}]")
    if vocab_size is not None:
        hint = "(data written with another vocabulary?)"
        ids = (0, vocab_size - 1, f"expected an id below vocab_size {vocab_size} {hint}")
    last = seq_length - 1
    position = (0, last, f"expected a position inside the sequence of {seq_length} tokens, [0, {last}]")
    binary = (0, 1, "expected 0 or 1")
    return dict(
        input_ids=ids, input_mask=binary, segment_ids=binary, masked_lm_positions=position, masked_lm_ids=ids,
        masked_lm_weights=binary, next_sentence_labels=binary,
    )


def pretraining_feature_spec(
    seq_length: int, max_predictions_per_seq: int
) -> dict[str, tf.io.FixedLenFeature]:
    """The original `run_pretraining.py` parsing spec of the BERT pre-training TFRecord format.

    Args:
        seq_length: max_seq_length the data was written with.
        max_predictions_per_seq: max_predictions_per_seq the data was written with.

    Returns:
        Feature name -> `tf.io.FixedLenFeature`: input_ids, input_mask, segment_ids
        [seq_length] int64; masked_lm_positions, masked_lm_ids [max_predictions_per_seq] int64;
        masked_lm_weights [max_predictions_per_seq] float32; next_sentence_labels [1] int64.
    """
    return {
        name: tf.io.FixedLenFeature([length], tf.float32 if name == FLOAT_FEATURE else tf.int64)
        for name, length in feature_lengths(seq_length, max_predictions_per_seq).items()
    }


def record_problem(
    example: tf.train.Example, seq_length: int, max_predictions_per_seq: int, vocab_size: int | None = None
) -> str | None:
    """What is wrong with one parsed pre-training record, or None when it is valid.

    Args:
        example: the record.
        seq_length, max_predictions_per_seq, vocab_size: as for `check_pretraining_files`.

    Returns:
        None, or one sentence naming the feature (and the value) at fault.
    """
    features = example.features.feature
    ranges = value_ranges(seq_length, vocab_size)
    for name, length in feature_lengths(seq_length, max_predictions_per_seq).items():
        if name not in features:
            return f"feature {name} is missing"
        kind = "float_list" if name == FLOAT_FEATURE else "int64_list"
        if features[name].WhichOneof("kind") != kind:
            return f"feature {name} is a {features[name].WhichOneof('kind')}, expected an {kind}"
        values = np.asarray(getattr(features[name], kind).value)
        if len(values) != length:
            return f"feature {name} has {len(values)} values, expected {length}" + length_hint(name, len(values))
        low, high, description = ranges[name]
        bad = (values < low) | (values > high) | (values != np.round(values))
        if bad.any():
            index = int(np.argmax(bad))
            return f"feature {name} has value {values[index].item()} at index {index}, {description}"
    return None


def length_hint(name: str, found: int | str) -> str:
    """Which writing setting a wrong length `found` points to (a "{}" to format later)."""
    if name in SEQUENCE_FEATURES:
        return f" (data written with max_seq_length {found}?)"
    if name in PREDICTION_FEATURES:
        return f" (data written with max_predictions_per_seq {found}?)"
    return ""


def serialize_example(
    input_ids: Sequence[int],
    input_mask: Sequence[int],
    segment_ids: Sequence[int],
    masked_lm_positions: Sequence[int],
    masked_lm_ids: Sequence[int],
    masked_lm_weights: Sequence[float],
    next_sentence_label: int,
) -> bytes:
    """One pre-training example as a serialized `tf.train.Example` in the original format.

    Args:
        input_ids, input_mask, segment_ids: int sequences of length max_seq_length.
        masked_lm_positions, masked_lm_ids: int sequences of length max_predictions_per_seq.
        masked_lm_weights: float sequence of length max_predictions_per_seq (1.0 real, 0.0 pad).
        next_sentence_label: 0 if segment B follows segment A, 1 if it is random.

    Returns:
        The serialized example (bytes), with deterministic field order.
    """

    def ints(values: Sequence[int]) -> tf.train.Feature:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=np.asarray(values, np.int64)))

    features = {
        "input_ids": ints(input_ids),
        "input_mask": ints(input_mask),
        "segment_ids": ints(segment_ids),
        "masked_lm_positions": ints(masked_lm_positions),
        "masked_lm_ids": ints(masked_lm_ids),
        "masked_lm_weights": tf.train.Feature(
            float_list=tf.train.FloatList(value=np.asarray(masked_lm_weights, np.float32))
        ),
        "next_sentence_labels": ints([next_sentence_label]),
    }
    example = tf.train.Example(features=tf.train.Features(feature=features))
    return example.SerializeToString(deterministic=True)
