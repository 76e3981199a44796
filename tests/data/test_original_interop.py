"""Interop with Google's original `create_pretraining_data.py` (bert-tensorflow, run unmodified).

The reference runs in a subprocess (the original defines absl flags at import), on a small
real-text file in Google's format. What docs/pretraining.md states is tested here: the reader reads
the tool's files; our pairs are the original pair algorithm's for the same seed (the original with
its masking drawing nothing); the tool's own records hold other pairs for that seed only because its
masking draws from the pairs' random stream between pairs.
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
    """The original tool's TFRecords, and the unmasked examples of its pair generation for the same
    seed with masking drawing nothing and with masking's draws made (tests/data/original_reference.py)."""
    directory = tmp_path_factory.mktemp("original")
    records = directory / "original.tfrecord"
    pairs, drawn_pairs = directory / "pairs.jsonl", directory / "drawn_pairs.jsonl"
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
        f"--drawn_pairs_output={drawn_pairs}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    examples = [[json.loads(line) for line in path.read_text().splitlines()] for path in (pairs, drawn_pairs)]
    return str(records), *examples


@pytest.mark.slow
def test_reader_reads_original_tfrecords(original_runs, data_helpers):
    records, _, _ = original_runs
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
    """Same seed, same text: our tokens, segments and NSP labels equal the original pair algorithm's
    (its masking drawing nothing), example by example."""
    _, reference, _ = original_runs
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


def test_original_tool_pairs_differ_from_ours_only_by_its_masking_draws(original_runs, data_helpers):
    """The unmodified tool's records (masks put back) are exactly the pairs its generation makes when
    masking draws from the same random stream between pairs, and differ from the pairs made without
    those draws (ours, test above): the pair algorithm is shared, the random stream is not."""
    records, undrawn, drawn = original_runs
    tool = data_helpers.parse_with_original_spec([records])
    unmasked = data_helpers.unmasked_ids(tool)
    assert len(drawn) == len(tool["input_ids"])
    for row, example in enumerate(drawn):
        length = len(example["input_ids"])
        assert unmasked[row, :length].tolist() == example["input_ids"], row
        assert tool["segment_ids"][row, :length].tolist() == example["segment_ids"], row
        assert tool["input_mask"][row].sum() == length
        assert tool["next_sentence_labels"][row, 0] == int(example["is_random_next"])
    differing = sum(a != b for a, b in zip(drawn, undrawn)) + abs(len(drawn) - len(undrawn))
    assert differing > len(undrawn) // 2, (differing, len(undrawn))
