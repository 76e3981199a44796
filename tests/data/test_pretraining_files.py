"""check_pretraining_files: the first record of every file, checked before training starts."""

import pytest
import tensorflow as tf

from keras_bert_lite.data.pretraining.reader import check_pretraining_files


@pytest.fixture
def good_file(tmp_path, data_helpers):
    return data_helpers.write_records(tmp_path / "good.tfrecord", [data_helpers.example_record()] * 2)


def test_good_files_are_returned_and_empty_ones_left_out(good_file, tmp_path, data_helpers, caplog):
    empty = data_helpers.write_records(tmp_path / "empty.tfrecord", [])
    assert check_pretraining_files(f"{good_file},{empty}", 128, 20, vocab_size=30522) == [good_file]
    assert "empty.tfrecord holds no record" in caplog.text
    with pytest.raises(ValueError, match=r"No pre-training records in any of the 1 input file\(s\): .*empty"):
        check_pretraining_files(empty, 128, 20)


@pytest.mark.parametrize(
    "overrides, seq, max_pred, vocab_size, message",
    [
        ({}, 64, 20, None, r"input_ids has 128 values, expected 64 \(data written with max_seq_length 128\?\)"),
        ({}, 128, 10, None, r"masked_lm_positions has 20 values, expected 10 \(.*max_predictions_per_seq 20\?\)"),
        ({}, 128, 20, 7, r"input_ids has value 101 at index 0, expected an id below vocab_size 7"),
        ({"masked_lm_positions": [128] * 20}, 128, 20, None, r"masked_lm_positions has value 128 .*sequence of 128"),
        ({"masked_lm_positions": [-1] * 20}, 128, 20, None, r"masked_lm_positions has value -1"),
        ({"next_sentence_label": 7}, 128, 20, None, r"next_sentence_labels has value 7 at index 0, expected 0 or 1"),
        ({"masked_lm_weights": [0.5] * 20}, 128, 20, None, r"masked_lm_weights has value 0.5 .*0 or 1"),
        ({"masked_lm_weights": [float("nan")] * 20}, 128, 20, None, r"masked_lm_weights has value nan"),
        ({"segment_ids": [2] * 128}, 128, 20, None, r"segment_ids has value 2 at index 0, expected 0 or 1"),
        ({"masked_lm_ids": [2**31] * 20}, 128, 20, None, r"masked_lm_ids has value 2147483648 .*\[0, 2147483647\]"),
    ],
)
def test_first_record_problems_name_file_feature_and_value(
    tmp_path, data_helpers, overrides, seq, max_pred, vocab_size, message
):
    data_helpers.write_records(tmp_path / "data.tfrecord", [data_helpers.example_record(**overrides)])
    with pytest.raises(ValueError, match=r"data\.tfrecord, record 1: feature " + message):
        check_pretraining_files(str(tmp_path / "*.tfrecord"), seq, max_pred, vocab_size)


def test_wrong_feature_type_and_missing_feature(tmp_path, data_helpers):
    example = tf.train.Example.FromString(data_helpers.example_record())
    example.features.feature["input_mask"].ClearField("int64_list")
    example.features.feature["input_mask"].bytes_list.value.append(b"1")
    path = data_helpers.write_records(tmp_path / "typed.tfrecord", [example.SerializeToString()])
    with pytest.raises(ValueError, match=r"typed\.tfrecord, record 1: feature input_mask is a bytes_list, expected"):
        check_pretraining_files(path, 128, 20)
    del example.features.feature["input_mask"]
    path = data_helpers.write_records(tmp_path / "missing.tfrecord", [example.SerializeToString()])
    with pytest.raises(ValueError, match=r"missing\.tfrecord, record 1: feature input_mask is missing"):
        check_pretraining_files(path, 128, 20)


def test_files_that_are_not_pretraining_tfrecords(good_file, tmp_path, data_helpers):
    text = tmp_path / "notes.txt"
    text.write_text("one sentence per line\n" * 20)
    with pytest.raises(ValueError, match=r"notes\.txt: cannot be read as a TFRecord file: corrupted record at 0"):
        check_pretraining_files([good_file, str(text)], 128, 20)
    truncated = tmp_path / "truncated.tfrecord"
    truncated.write_bytes(open(good_file, "rb").read()[:100])
    with pytest.raises(ValueError, match=r"truncated\.tfrecord: cannot be read as a TFRecord file: truncated"):
        check_pretraining_files(str(truncated), 128, 20)
    not_example = data_helpers.write_records(tmp_path / "bytes.tfrecord", [b"\xff\xfe not a protobuf \x80"])
    with pytest.raises(ValueError, match=r"bytes\.tfrecord, record 1: not a tf\.train\.Example"):
        check_pretraining_files(not_example, 128, 20)
    with pytest.raises(ValueError, match=r"cannot be read as a TFRecord file"):
        check_pretraining_files(str(tmp_path), 128, 20)  # a directory


def test_bad_arguments(good_file):
    with pytest.raises(FileNotFoundError, match="matches no file"):
        check_pretraining_files(good_file + ".missing", 128, 20)
    for seq, max_pred, vocab_size in [(0, 20, None), (128, -1, None), (128, 20, 0), (128.0, 20, None)]:
        with pytest.raises(ValueError, match="must be a positive int"):
            check_pretraining_files(good_file, seq, max_pred, vocab_size)
