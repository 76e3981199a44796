"""The tf.data reader: values, names and shapes, training mode, sharding, dynamic masking, errors."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.pretraining.format import pretraining_feature_spec
from keras_bert_lite.data.pretraining.reader import pretraining_dataset
from keras_bert_lite.text.masking import MaskedLMMasker
from keras_bert_lite.text.tokenizer import BertTokenizer

FEATURES = {
    "input_word_ids": "input_ids",
    "input_mask": "input_mask",
    "input_type_ids": "segment_ids",
    "masked_lm_positions": "masked_lm_positions",
}
LABELS = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def _read_all(dataset) -> dict:
    """Concatenated batches, under the original feature names."""
    return _merge(list(dataset))


def _merge(batches: list) -> dict:
    """Batches of `(features, labels)` concatenated, under the original feature names."""
    merged = {
        original: np.concatenate([f[ours].numpy() for f, _ in batches]) for ours, original in FEATURES.items()
    }
    merged.update({name: np.concatenate([labels[name].numpy() for _, labels in batches]) for name in LABELS})
    return merged


def _rows(parsed: dict) -> set:
    return {row.astype(np.int64).tobytes() for row in parsed["input_ids"]}


def test_feature_spec_is_the_original(data_helpers):
    assert pretraining_feature_spec(64, 10) == data_helpers.original_feature_spec(64, 10)


@pytest.mark.slow
def test_evaluation_read_matches_plain_parse(small_generated, data_helpers):
    stats, files, expected = small_generated
    dataset = pretraining_dataset(
        files,
        100,
        data_helpers.seq_length,
        data_helpers.max_predictions,
        is_training=False,
        drop_remainder=False,
    )
    features, labels = dataset.element_spec
    assert {k: v.dtype for k, v in features.items()} == dict.fromkeys(FEATURES, tf.int32)
    assert {k: v.dtype for k, v in labels.items()} == {
        "masked_lm_ids": tf.int32,
        "masked_lm_weights": tf.float32,
        "next_sentence_labels": tf.int32,
    }
    values = _read_all(dataset)
    for name, array in expected.items():
        np.testing.assert_array_equal(values[name], array, err_msg=name)


@pytest.mark.slow
def test_training_read_static_shapes_repeat_and_seed(small_generated, data_helpers):
    stats, files, expected = small_generated
    seq, max_pred = data_helpers.seq_length, data_helpers.max_predictions

    def dataset():
        return pretraining_dataset(files, 64, seq, max_pred, shuffle_buffer=500, seed=42)

    training = dataset()
    features, labels = training.element_spec
    assert features["input_word_ids"].shape == (64, seq) and features["masked_lm_positions"].shape == (
        64,
        max_pred,
    )
    assert labels["masked_lm_weights"].shape == (64, max_pred) and labels["next_sentence_labels"].shape == (
        64,
        1,
    )
    epoch_batches = stats.examples // 64
    first = [f["input_word_ids"].numpy() for f, _ in training.take(epoch_batches + 3)]
    assert len(first) == epoch_batches + 3  # repeats past one epoch
    second = [f["input_word_ids"].numpy() for f, _ in dataset().take(3)]
    np.testing.assert_array_equal(np.stack(first[:3]), np.stack(second))
    # Shuffled: the first batch is not the files' first records (an evaluation read's first batch, as
    # test_evaluation_read_matches_plain_parse checks).
    assert not np.array_equal(first[0], expected["input_ids"][:64])


def test_training_read_without_autotuning_reads_what_autotuning_reads(small_generated, data_helpers):
    """tf.data autotuning is off (deleting an autotuned iterator waits for its tuning thread, up to a
    minute in TensorFlow 2.21: the main job lost about 50 s at its switch to 64-token data), and the
    batches are the ones the same pipeline gives with it on."""
    _, files, _ = small_generated

    def dataset():  # a new pipeline each time: iterating one again reshuffles it
        return pretraining_dataset(files, 32, data_helpers.seq_length, data_helpers.max_predictions,
                                   shuffle_buffer=500, seed=7)

    assert dataset().options().autotune.enabled is False
    autotuned = tf.data.Options()
    autotuned.autotune.enabled = True
    batches, reference = (_merge(list(d.take(6))) for d in (dataset(), dataset().with_options(autotuned)))
    assert batches.keys() == reference.keys() and len(reference["input_ids"]) == 6 * 32
    for name, values in reference.items():
        np.testing.assert_array_equal(batches[name], values)


@pytest.mark.slow
@pytest.mark.parametrize("num_files", [3, 1])
def test_input_pipelines_split_the_data(small_generated, data_helpers, num_files):
    """Files (or, with fewer files than pipelines, records) are divided between input pipelines."""
    stats, files, expected = small_generated
    files = files[:num_files]
    total = sum(1 for _ in tf.data.TFRecordDataset(files))
    parts = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=pipeline, num_replicas_in_sync=2
        )
        dataset = pretraining_dataset(
            files,
            16,
            data_helpers.seq_length,
            data_helpers.max_predictions,
            is_training=False,
            drop_remainder=False,
            input_context=context,
        )
        assert dataset.element_spec[0]["input_word_ids"].shape[0] in (None, 8)
        batches = list(dataset)
        assert batches[0][0]["input_word_ids"].shape[0] == 8  # per-replica batch
        parts.append(_merge(batches))
    assert len(parts[0]["input_ids"]) + len(parts[1]["input_ids"]) == total
    assert not _rows(parts[0]) & _rows(parts[1])
    assert _rows(parts[0]) | _rows(parts[1]) == _rows(data_helpers.parse_with_original_spec(files))


@pytest.mark.slow
def test_dynamic_masking_remasks_the_same_text(small_generated, real_vocab_file, special_ids, data_helpers):
    stats, files, expected = small_generated
    seq, max_pred = data_helpers.seq_length, data_helpers.max_predictions
    dataset = pretraining_dataset(
        files[:1],
        64,
        seq,
        max_pred,
        dynamic_masking=True,
        vocabulary=real_vocab_file,
        is_training=False,
        drop_remainder=False,
        seed=3,
    )
    dynamic = _read_all(dataset)
    stored = data_helpers.parse_with_original_spec(files[:1])
    # Same text and segments once the masks are undone; different masks.
    np.testing.assert_array_equal(data_helpers.unmasked_ids(dynamic), data_helpers.unmasked_ids(stored))
    np.testing.assert_array_equal(dynamic["segment_ids"], stored["segment_ids"])
    np.testing.assert_array_equal(dynamic["next_sentence_labels"], stored["next_sentence_labels"])
    changed = (dynamic["masked_lm_positions"] != stored["masked_lm_positions"]).any(axis=1)
    assert changed.mean() > 0.9
    selected = dynamic["masked_lm_weights"] > 0
    rows = np.nonzero(selected)[0]
    positions = dynamic["masked_lm_positions"][selected]
    labels = dynamic["masked_lm_ids"][selected]
    assert not np.isin(labels, [special_ids["[CLS]"], special_ids["[SEP]"], special_ids["[PAD]"]]).any()
    np.testing.assert_array_equal(labels, data_helpers.unmasked_ids(stored)[rows, positions])
    assert abs(np.mean(dynamic["input_ids"][rows, positions] == special_ids["[MASK]"]) - 0.8) < 0.05
    # Every read draws new masks.
    again = _read_all(dataset)
    assert (again["masked_lm_positions"] != dynamic["masked_lm_positions"]).any()


def test_dynamic_masking_arguments(small_generated, real_vocab_file, data_helpers):
    _, files, _ = small_generated
    seq, max_pred = data_helpers.seq_length, data_helpers.max_predictions
    with pytest.raises(ValueError, match="needs a masker or a vocabulary"):
        pretraining_dataset(files, 8, seq, max_pred, dynamic_masking=True)
    masker = MaskedLMMasker(
        vocab_size=30522,
        mask_token_id=103,
        special_token_ids=[0, 101, 102],
        max_predictions_per_seq=max_pred + 1,
    )
    with pytest.raises(ValueError, match=f"up to {max_pred + 1} positions.*is {max_pred}"):
        pretraining_dataset(files, 8, seq, max_pred, dynamic_masking=True, masker=masker)


def test_pattern_without_match(tmp_path):
    with pytest.raises(FileNotFoundError, match="matches no file"):
        pretraining_dataset(str(tmp_path / "missing-*.tfrecord"), 8, 128, 20)


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"segment_ids": [0] * 127}, r"feature segment_ids has 127 values, expected 128 \(.*max_seq_length 127\?\)"),
        ({"masked_lm_positions": [1] * 19 + [128]}, r"feature masked_lm_positions has value 128 at index 19, .*128"),
        ({"next_sentence_label": 7}, r"feature next_sentence_labels has value 7 at index 0, expected 0 or 1"),
        ({"masked_lm_weights": [1.0] * 5 + [0.5] * 15}, r"feature masked_lm_weights has value 0.5 at index 5"),
        ({"input_ids": [101] + [30522] * 127}, r"feature input_ids has value 30522 at index 1, .*vocab_size 30522"),
        ({"input_mask": [1] * 127 + [-1]}, r"feature input_mask has value -1 at index 127, expected 0 or 1"),
    ],
)
def test_bad_record_names_file_record_feature_and_value(tmp_path, data_helpers, overrides, message):
    """A bad record after the first, in one of several shards, read in training and evaluation mode."""
    good = data_helpers.example_record()
    shards = [data_helpers.write_records(tmp_path / f"shard-{i}.tfrecord", [good] * 90) for i in range(3)]
    data_helpers.write_records(tmp_path / "shard-1.tfrecord", [good] * 70 + [data_helpers.example_record(**overrides)])
    pattern = str(tmp_path / "shard-*.tfrecord")
    expected = r"shard-1\.tfrecord, record 71: " + message
    with pytest.raises(tf.errors.InvalidArgumentError, match=expected):
        list(pretraining_dataset(pattern, 16, 128, 20, is_training=False, vocab_size=30522))
    if "segment_ids" in overrides:  # training mode: shuffled, interleaved shards, repeated
        with pytest.raises(tf.errors.InvalidArgumentError, match=expected):
            for _ in pretraining_dataset(shards, 16, 128, 20, shuffle_buffer=8, vocab_size=30522).take(50):
                pass


@pytest.mark.slow
def test_unreadable_records_name_file_and_record(tmp_path, data_helpers):
    """Truncated or corrupted files and records that are not tf.train.Examples, behind a good first record."""
    good = data_helpers.example_record()
    path = data_helpers.write_records(tmp_path / "data.tfrecord", [good] * 150)
    data = open(path, "rb").read()
    record_bytes = len(good) + 16
    truncated = tmp_path / "truncated.tfrecord"
    truncated.write_bytes(data[: 99 * record_bytes + 30])
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"truncated\.tfrecord, record 100 \(byte {99 * record_bytes} of {99 * record_bytes + 30}\): "
        "cannot be read .*truncated or corrupted",
    ):
        list(pretraining_dataset([path, str(truncated)], 16, 128, 20, is_training=False))
    corrupted = bytearray(data)
    corrupted[120 * record_bytes + 40] ^= 0xFF  # inside record 121's data: its CRC no longer matches
    (tmp_path / "corrupted.tfrecord").write_bytes(bytes(corrupted))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"corrupted\.tfrecord, record 121 \(byte"):
        list(pretraining_dataset(str(tmp_path / "corrupted.tfrecord"), 16, 128, 20, is_training=False))
    garbage = b"\xff\xfe not a protobuf \x80"
    middle = data_helpers.write_records(tmp_path / "middle.tfrecord", [good] * 70 + [garbage] + [good] * 80)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"middle\.tfrecord, records 65 to 128: one of them is not a tf\.train\.Example",
    ):
        list(pretraining_dataset(middle, 16, 128, 20, is_training=False))
    last = data_helpers.write_records(tmp_path / "last.tfrecord", [good] * 70 + [garbage])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"last\.tfrecord, record 65 \(byte .*cannot be read"):
        list(pretraining_dataset(last, 16, 128, 20, is_training=False))


def test_empty_files_are_left_out_and_all_empty_is_an_error(tmp_path, data_helpers):
    """Training on empty files used to wait forever for a first record."""
    empty = data_helpers.write_records(tmp_path / "empty.tfrecord", [])
    with pytest.raises(ValueError, match=r"No pre-training records in any of the 1 input file\(s\): .*empty"):
        pretraining_dataset(empty, 2, 128, 20)
    good = data_helpers.write_records(tmp_path / "good.tfrecord", [data_helpers.example_record()] * 3)
    features, _ = next(iter(pretraining_dataset([empty, good], 2, 128, 20, shuffle_buffer=2)))
    assert features["input_word_ids"].shape == (2, 128)


@pytest.fixture(scope="module")
def masker(real_vocab_file, data_helpers):
    tokenizer = BertTokenizer(real_vocab_file)
    return MaskedLMMasker.from_tokenizer(tokenizer, max_predictions_per_seq=data_helpers.max_predictions)


def _dynamic(files, masker, data_helpers, **kwargs):
    return pretraining_dataset(
        files, 16, data_helpers.seq_length, data_helpers.max_predictions, dynamic_masking=True, masker=masker,
        **kwargs,
    )


def _batches(iterator, count):
    return [tf.nest.map_structure(lambda t: t.numpy(), next(iterator)) for _ in range(count)]


@pytest.mark.slow
def test_dynamic_masking_iterator_saves_and_resumes(small_generated, masker, data_helpers, tmp_path):
    """A mid-stream checkpoint of the iterator restores into a new dataset: the same next batches."""
    _, files, _ = small_generated
    iterator = iter(_dynamic(files, masker, data_helpers, seed=5, shuffle_buffer=50))
    first = _batches(iterator, 3)[0]
    path = tf.train.Checkpoint(iterator=iterator).save(str(tmp_path / "ckpt"))
    expected = _batches(iterator, 3)
    resumed = iter(_dynamic(files, masker, data_helpers, seed=5, shuffle_buffer=50))
    # A seed reproduces the masks from the start (read before the restore moves the iterator on).
    again = _batches(resumed, 1)[0]
    tf.nest.map_structure(np.testing.assert_array_equal, first, again)
    tf.train.Checkpoint(iterator=resumed).restore(path).assert_consumed()
    for got, want in zip(_batches(resumed, 3), expected):
        tf.nest.map_structure(np.testing.assert_array_equal, got, want)
    # Another seed draws other masks.
    other = _batches(iter(_dynamic(files, masker, data_helpers, seed=6, shuffle_buffer=50)), 1)[0]
    assert not np.array_equal(other[0]["masked_lm_positions"], first[0]["masked_lm_positions"])


@pytest.mark.slow
def test_dynamic_masking_draws_new_masks_every_epoch(small_generated, masker, data_helpers):
    _, files, _ = small_generated
    records = sum(1 for _ in tf.data.TFRecordDataset(files[:1]))
    dataset = _dynamic(files[:1], masker, data_helpers, seed=1, shuffle_buffer=1)
    seen: dict[bytes, list] = {}
    for features, labels in dataset.take(2 * records // 16 + 1):
        merged = {
            "input_ids": features["input_word_ids"].numpy(),
            "masked_lm_positions": features["masked_lm_positions"].numpy(),
            "masked_lm_ids": labels["masked_lm_ids"].numpy(),
            "masked_lm_weights": labels["masked_lm_weights"].numpy(),
        }
        for row, text in enumerate(data_helpers.unmasked_ids(merged)):
            seen.setdefault(text.tobytes(), []).append(merged["masked_lm_positions"][row].tobytes())
    twice = [masks for masks in seen.values() if len(masks) >= 2]
    assert len(twice) > records // 2
    assert np.mean([masks[0] != masks[1] for masks in twice]) > 0.9
