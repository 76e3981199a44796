"""Checking and reading BERT pre-training TFRecords (ours and Google's original format).

`check_pretraining_files` reads the first record of every file, so that a file written with another
`--max_seq_length`, `--max_predictions_per_seq` or vocabulary, a file that is not a TFRecord file, or
a record that is not a `tf.train.Example` is reported, naming the file, before a launcher builds a
model or starts a week-long run; `pretraining_dataset` then checks every record as it reads it.

Example:

    >>> files = check_pretraining_files("data/train-*.tfrecord", seq_length=128,
    ...                                 max_predictions_per_seq=20, vocab_size=30522)
    >>> dataset = pretraining_dataset(files, batch_size=32, seq_length=128, max_predictions_per_seq=20)
    >>> features, labels = next(iter(dataset))
    >>> features["input_word_ids"].shape, labels["next_sentence_labels"].shape
    (TensorShape([32, 128]), TensorShape([32, 1]))
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import tensorflow as tf
from absl import logging
from google.protobuf.message import DecodeError

from keras_bert_lite.data.bad_input import op_error_text
from keras_bert_lite.data.corpora import expand_file_patterns
from keras_bert_lite.data.pretraining.format import FLOAT_FEATURE, feature_lengths, record_problem
from keras_bert_lite.data.pretraining.records import read_checked_records
from keras_bert_lite.text.masking import MaskedLMMasker
from keras_bert_lite.text.tokenizer import BertTokenizer


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


def pretraining_dataset(
    file_patterns: str | Sequence[str],
    batch_size: int,
    seq_length: int,
    max_predictions_per_seq: int,
    *,
    dynamic_masking: bool = False,
    masker: MaskedLMMasker | None = None,
    vocabulary: str | Sequence[str] | None = None,
    is_training: bool = True,
    shuffle_buffer: int = 10_000,
    seed: int | None = None,
    input_context: tf.distribute.InputContext | None = None,
    drop_remainder: bool = True,
    vocab_size: int | None = None,
) -> tf.data.Dataset:
    """Reads pre-training TFRecords into `(features, labels)` batches for `BertPretrainer`.

    Args:
        file_patterns, seq_length, max_predictions_per_seq, vocab_size: as for `check_pretraining_files`;
            ids at or above `vocab_size` are reported in every record, not only the first.
        batch_size: global batch size; with `input_context`, each input pipeline yields
            `input_context.get_per_replica_batch_size(batch_size)` examples per batch.
        dynamic_masking: ignore the stored masks and draw new ones every time a record is read
            (new masks every epoch). The masks come from stateless random ops seeded per batch by
            a `tf.data.Dataset.random` stream, so the dataset's iterator holds no variable and can
            be saved in a `tf.train.Checkpoint` (a resumed run continues the same mask sequence),
            and a seed reproduces every mask.
        masker: the `MaskedLMMasker` whose settings (rates, special tokens, whole words) define the
            dynamic masks; its `max_predictions_per_seq` must equal `max_predictions_per_seq`.
            Its seed is used when `seed` is None; its own seed state is not advanced.
        vocabulary: alternatively, a vocab.txt path or token list from which a default masker
            (15 % selection, 80/10/10, [CLS]/[SEP]/[PAD] never selected) is built.
        is_training: shuffle files and records and repeat forever; otherwise read the files
            once, in order.
        shuffle_buffer: records in the shuffle buffer when training.
        seed: seed of the shuffles and of the dynamic masks.
        input_context: from `tf.distribute.Strategy.distribute_datasets_from_function`; files
            (or, with fewer files than pipelines, records) are sharded per input pipeline.
        drop_remainder: drop a last partial batch, so every batch has a static shape.

    Returns:
        A dataset of `(features, labels)`: features `input_word_ids`, `input_mask`,
        `input_type_ids` int32 [batch, seq_length] and `masked_lm_positions` int32
        [batch, max_predictions_per_seq]; labels `masked_lm_ids` int32 and `masked_lm_weights`
        float32 [batch, max_predictions_per_seq], `next_sentence_labels` int32 [batch, 1].
        Iterating raises `InvalidArgumentError` "<file>, record <n>: <problem>" at the first
        record that cannot be read or parsed, lacks a feature, has one of the wrong length, or
        holds a value out of range (see `read_checked_records`).

    Raises:
        FileNotFoundError: a pattern matches no file.
        ValueError: inconsistent arguments, or what `check_pretraining_files` reports, before any
            batch is read. Empty files are left out, so training never waits on them forever.
    """
    files = check_pretraining_files(file_patterns, seq_length, max_predictions_per_seq, vocab_size)
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}.")
    if dynamic_masking and masker is None:
        if vocabulary is None:
            raise ValueError("dynamic_masking needs a masker or a vocabulary to build one.")
        masker = MaskedLMMasker.from_tokenizer(
            BertTokenizer(vocabulary), max_predictions_per_seq=max_predictions_per_seq, seed=seed
        )
    if dynamic_masking and masker.max_predictions_per_seq != max_predictions_per_seq:
        raise ValueError(
            f"The masker predicts up to {masker.max_predictions_per_seq} positions per sequence, "
            f"but max_predictions_per_seq is {max_predictions_per_seq}."
        )
    shards, shard_index = 1, 0
    if input_context is not None:
        batch_size = input_context.get_per_replica_batch_size(batch_size)
        shards, shard_index = input_context.num_input_pipelines, input_context.input_pipeline_id
    sizes = [tf.io.gfile.stat(path).length for path in files]
    dataset = tf.data.Dataset.from_tensor_slices((tf.constant(files, tf.string), tf.constant(sizes, tf.int64)))
    shard_files = shards > 1 and len(files) >= shards
    if shard_files:
        dataset = dataset.shard(shards, shard_index)
    if is_training:
        dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True).repeat()

    dataset = dataset.interleave(  # one file at a time, in order, unless training
        lambda path, size: read_checked_records(path, size, seq_length, max_predictions_per_seq, vocab_size),
        cycle_length=min(len(files), 8) if is_training else 1,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=seed is not None or not is_training,
    )
    if shards > 1 and not shard_files:
        dataset = dataset.shard(shards, shard_index)
    if is_training:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder).map(
        lambda packed: _features_and_labels(packed, seq_length, max_predictions_per_seq)
    )
    if dynamic_masking:
        mask_seeds = tf.data.Dataset.random(
            seed=masker.seed if seed is None else seed, rerandomize_each_iteration=True
        )
        dataset = tf.data.Dataset.zip(dataset, mask_seeds).map(
            lambda batch, mask_seed: _remask(*batch, masker, tf.stack([mask_seed, shard_index])),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
    # No tf.data autotuning: deleting an iterator (at a switch to new data, at the end of a run) waits
    # for the autotuning thread's next wake-up, which comes up to a minute later in TensorFlow 2.21. The
    # elements and their order are the same with it off (AUTOTUNE values then take tf.data's fixed defaults).
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)


def _features_and_labels(
    packed: tf.Tensor, seq_length: int, max_predictions_per_seq: int
) -> tuple[dict[str, tf.Tensor], dict[str, tf.Tensor]]:
    """Batches of `read_checked_records` records, int32 [batch, width] -> the model's (features, labels)."""
    lengths = feature_lengths(seq_length, max_predictions_per_seq)
    values = dict(zip(lengths, tf.split(packed, list(lengths.values()), axis=1)))
    values[FLOAT_FEATURE] = tf.cast(values[FLOAT_FEATURE], tf.float32)
    inputs = {
        "input_word_ids": values["input_ids"],
        "input_mask": values["input_mask"],
        "input_type_ids": values["segment_ids"],
        "masked_lm_positions": values["masked_lm_positions"],
    }
    labels = {name: values[name] for name in ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")}
    return inputs, labels


def _remask(features: dict, labels: dict, masker: MaskedLMMasker, seed: tf.Tensor) -> tuple[dict, dict]:
    """Restores the unmasked ids from the labels and draws new masks from `seed` [2] int64.

    The masker's settings are applied through its stateless `mask`, not through the layer's call,
    whose seed generator is a variable that would make the iterator impossible to save.
    """
    selected = labels["masked_lm_weights"] > 0
    rows = tf.broadcast_to(tf.range(tf.shape(selected)[0])[:, tf.newaxis], tf.shape(selected))
    indices = tf.boolean_mask(tf.stack([rows, features["masked_lm_positions"]], axis=-1), selected)
    original = tf.tensor_scatter_nd_update(
        features["input_word_ids"], indices, tf.boolean_mask(labels["masked_lm_ids"], selected)
    )
    masked = masker.mask(original, seed)
    for part in (features, labels):  # `mask_tokens` returns them in the model's names and dtypes
        for name in masked.keys() & part.keys():
            part[name] = tf.ensure_shape(masked[name], part[name].shape)
    return features, labels
