"""Every record checked in the graph: generated files, valid ones read exactly, invalid ones named.

Files are generated with hypothesis (up to 150 records each, several chunks); `read_checked_records`
runs inside one traced function, so thousands of records are checked in a few seconds.
"""

import re

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from keras_bert_lite.data.pretraining.format import (
    FEATURES,
    feature_lengths,
    record_problem,
    serialize_example,
)
from keras_bert_lite.data.pretraining.records import CHUNK_SIZE, read_checked_records

SEQ, PRED, VOCAB = 12, 4, 50
LENGTHS = feature_lengths(SEQ, PRED)
SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@tf.function
def _read_all(path, size):
    """All records of a file, packed int32 [N, width] (raises at the first bad one)."""
    return read_checked_records(path, size, SEQ, PRED, VOCAB).batch(1_000).get_single_element()


# Exclusive upper bound of each feature's values, value by value in FEATURES order.
_BOUNDS = np.concatenate(
    [np.full(LENGTHS[name], {"input_ids": VOCAB, "masked_lm_ids": VOCAB, "masked_lm_positions": SEQ}.get(name, 2))
     for name in FEATURES]
)


@st.composite
def record_lists(draw, max_size=150):
    """Valid records (dicts of int lists): a drawn array folded into each feature's range."""
    count = draw(st.integers(1, max_size))
    raw = draw(arrays(np.int64, (count, len(_BOUNDS)), elements=st.integers(0, 2**16)))
    values = raw % _BOUNDS
    splits = np.cumsum([LENGTHS[name] for name in FEATURES])[:-1]
    return [dict(zip(FEATURES, (part.tolist() for part in np.split(row, splits)))) for row in values]


def _serialize(record: dict) -> bytes:
    values = {name: record[name] for name in FEATURES if name != "next_sentence_labels"}
    return serialize_example(**values, next_sentence_label=record["next_sentence_labels"][0])


def _write(directory, name, serialized) -> str:
    path = str(directory / name)
    with tf.io.TFRecordWriter(path) as writer:
        for record in serialized:
            writer.write(record)
    return path


def _read(path):
    return _read_all(tf.constant(path), tf.constant(tf.io.gfile.stat(path).length, tf.int64)).numpy()


# 60% and 80% of the profile's examples (tests/conftest.py): 60 and 80 in the suite, ten times more when thorough.
@settings(max_examples=settings.default.max_examples * 60 // 100, **SETTINGS)
@given(record_lists())
def test_valid_files_are_read_exactly(tmp_path_factory, generated):
    path = _write(tmp_path_factory.mktemp("valid"), "valid.tfrecord", [_serialize(r) for r in generated])
    expected = np.array([np.concatenate([r[name] for name in FEATURES]) for r in generated], np.int32)
    np.testing.assert_array_equal(_read(path), expected)


# (feature, a bad value or a bad length) for one record of a file.
_BAD_VALUES = {
    "input_ids": [VOCAB, -1, 2**40],
    "input_mask": [2, -1],
    "segment_ids": [2, 7],
    "masked_lm_positions": [SEQ, -3],
    "masked_lm_ids": [VOCAB, -1],
    "masked_lm_weights": [0.5, -1.0, 2.0, float("nan"), float("inf")],
    "next_sentence_labels": [2, -1, 7],
}
corruptions = st.one_of(
    st.tuples(st.just("value"), st.sampled_from(sorted(_BAD_VALUES)), st.data()),
    st.tuples(st.just("length"), st.sampled_from(FEATURES), st.integers(0, 20)),
    st.tuples(st.just("garbage"), st.just(None), st.binary(min_size=1, max_size=40)),
    st.tuples(st.just("truncate"), st.just(None), st.integers(1, 200)),
)


def _without_value(message: str) -> str:
    """Float values are formatted differently by TensorFlow and Python; compare the rest."""
    return re.sub(r"has value \S+ at", "has value V at", message)


@settings(max_examples=settings.default.max_examples * 80 // 100, **SETTINGS)
@given(record_lists(), st.data(), corruptions)
def test_a_bad_record_is_named_by_file_and_record(tmp_path_factory, generated, data, corruption):
    kind, feature, detail = corruption
    bad = data.draw(st.integers(0, len(generated) - 1), label="bad record")
    serialized = [_serialize(r) for r in generated]
    directory = tmp_path_factory.mktemp("invalid")
    if kind == "value":
        record = dict(generated[bad])
        values = list(record[feature])
        values[detail.draw(st.integers(0, len(values) - 1))] = detail.draw(st.sampled_from(_BAD_VALUES[feature]))
        record[feature] = values
        serialized[bad] = _serialize(record)
    elif kind == "length":
        length = detail + 1 if detail == LENGTHS[feature] else detail
        example = tf.train.Example.FromString(serialized[bad])
        values = example.features.feature[feature]
        values = values.float_list if feature == "masked_lm_weights" else values.int64_list
        values.value[:] = (list(values.value) * 30)[:length]
        serialized[bad] = example.SerializeToString()
    elif kind == "garbage":
        serialized[bad] = b"\xff\xfe" + detail  # never a valid protobuf field key
    path = _write(directory, "data.tfrecord", serialized)
    if kind == "truncate":
        data_bytes = open(path, "rb").read()
        offset = sum(len(r) + 16 for r in serialized[:bad])
        cut = offset + min(detail, len(serialized[bad]) + 15)
        open(path, "wb").write(data_bytes[:cut])
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        _read(path)
    message = re.search(r"assertion failed: \[(.*)\]\n", raised.value.message).group(1)
    chunk_start = bad // CHUNK_SIZE * CHUNK_SIZE
    if kind in ("value", "length"):
        problem = record_problem(tf.train.Example.FromString(serialized[bad]), SEQ, PRED, VOCAB)
        assert _without_value(message) == _without_value(f"{path}, record {bad + 1}: {problem}")
    elif kind == "garbage" and chunk_start + CHUNK_SIZE < len(serialized):
        assert message.startswith(f"{path}, records {chunk_start + 1} to {chunk_start + CHUNK_SIZE}: one of them")
    elif kind == "garbage":
        assert re.match(rf"{re.escape(path)}, record {chunk_start + 1} \(byte \d+ of \d+\): cannot be read", message)
    else:
        assert re.match(rf"{re.escape(path)}, record {bad + 1} \(byte {offset} of {cut}\): cannot be read", message)
