"""Interop with Google's original `create_pretraining_data.py` (bert-tensorflow, run unmodified).

The reference runs in a subprocess (the original defines absl flags at import), on a small
real-text file in Google's format.
"""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_lite.data.corpora import read_documents
from keras_bert_lite.data.pretraining.reader import pretraining_dataset
from keras_bert_lite.data.pretraining.writer import create_pretraining_data

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]  # the original tool runs in a fresh process

SEED = 3
DUPE_FACTOR = 2


@pytest.fixture(scope="module")
def original_runs(corpus_file, real_vocab_file, tmp_path_factory, data_helpers):
    """The original tool's TFRecords and its unmasked examples for the same seed (JSON lines)."""
    directory = tmp_path_factory.mktemp("original")
    records = directory / "original.tfrecord"
    pairs = directory / "pairs.jsonl"
    command = [
        sys.executable,
        str(pathlib.Path(__file__).with_name("original_reference.py")),
        f"--input_file={corpus_file}",
        f"--output_file={records}",
        f"--vocab_file={real_vocab_file}",
        "--do_lower_case=True",
        f"--max_seq_length={data_helpers.seq_length}",
        f"--max_predictions_per_seq={data_helpers.max_predictions}",
        f"--random_seed={SEED}",
        f"--dupe_factor={DUPE_FACTOR}",
        "--masked_lm_prob=0.15",
        "--short_seq_prob=0.1",
        f"--pairs_output={pairs}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    return str(records), [json.loads(line) for line in pairs.read_text().splitlines()]


@pytest.mark.slow
def test_reader_reads_original_tfrecords(original_runs, data_helpers):
    records, _ = original_runs
    expected = data_helpers.parse_with_original_spec([records])
    assert len(expected["input_ids"]) > 100
    dataset = pretraining_dataset(
        records,
        batch_size=16,
        seq_length=data_helpers.seq_length,
        max_predictions_per_seq=data_helpers.max_predictions,
        is_training=False,
        drop_remainder=False,
    )
    batches = list(dataset)
    names = {
        "input_word_ids": "input_ids",
        "input_mask": "input_mask",
        "input_type_ids": "segment_ids",
        "masked_lm_positions": "masked_lm_positions",
    }
    for ours, original in names.items():
        values = np.concatenate([features[ours].numpy() for features, _ in batches])
        assert batches[0][0][ours].dtype.name == "int32"
        np.testing.assert_array_equal(values, expected[original])
    for name in ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels"):
        values = np.concatenate([labels[name].numpy() for _, labels in batches])
        assert batches[0][1][name].dtype.name == ("float32" if name == "masked_lm_weights" else "int32")
        np.testing.assert_array_equal(values, expected[name])
    # Training mode: static shapes for the model.
    features, labels = next(
        iter(pretraining_dataset(records, 8, data_helpers.seq_length, data_helpers.max_predictions))
    )
    assert features["input_word_ids"].shape == (8, data_helpers.seq_length)
    assert labels["next_sentence_labels"].shape == (8, 1)


def test_same_examples_as_original_before_masking(
    original_runs, corpus_file, real_vocab_file, tmp_path, data_helpers
):
    """Same seed, same text: our tokens, segments and NSP labels equal the original's, example by example."""
    _, reference = original_runs
    output = str(tmp_path / "ours.tfrecord")
    stats = create_pretraining_data(
        read_documents(corpus_file),
        real_vocab_file,
        output,
        max_seq_length=data_helpers.seq_length,
        max_predictions_per_seq=data_helpers.max_predictions,
        dupe_factor=DUPE_FACTOR,
        short_seq_prob=0.1,
        seed=SEED,
    )
    ours = data_helpers.parse_with_original_spec([output])
    assert stats.examples == len(reference) == len(ours["input_ids"])
    unmasked = data_helpers.unmasked_ids(ours)
    for row, example in enumerate(reference):
        length = len(example["input_ids"])
        assert unmasked[row, :length].tolist() == example["input_ids"], row
        assert ours["segment_ids"][row, :length].tolist() == example["segment_ids"], row
        assert ours["input_mask"][row].sum() == length
        assert ours["next_sentence_labels"][row, 0] == int(example["is_random_next"])
