"""Documents -> masked NSP examples -> TFRecord shards in the original BERT pre-training format.

Sentences are tokenized in batches in a `tf.data` pipeline with `BertTokenizer`, sentence pairs
are drawn with `create_pair_instances` (BERT's original algorithm), packed as
`[CLS] A [SEP] B [SEP]`, masked in batches with `MaskedLMMasker` and written round-robin to the
output files as `tf.train.Example`s with exactly the features of Google's
`create_pretraining_data.py` (see `pretraining_feature_spec`). Every random draw comes from
`seed`: the same inputs and seed give byte-identical files.

Example:

    >>> documents = [["The cat sat on the mat.", "It was happy."], ["Dogs bark.", "Birds sing."]]
    >>> stats = create_pretraining_data(documents, "vocab.txt",
    ...                                 ["out/train-0.tfrecord", "out/train-1.tfrecord"],
    ...                                 max_seq_length=128, dupe_factor=2, seed=1)
    >>> stats.examples, stats.documents_skipped
    (7, 0)
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from absl import logging
from tqdm import tqdm

from keras_bert_lite.atomic import atomic_write, temporary_path
from keras_bert_lite.data.bad_input import op_error_text
from keras_bert_lite.data.pretraining.format import serialize_example
from keras_bert_lite.data.pretraining.pairs import PairInstance, create_pair_instances
from keras_bert_lite.text.masking import MaskedLMMasker
from keras_bert_lite.text.tokenizer import BertTokenizer


@dataclasses.dataclass(frozen=True)
class PretrainingDataStats:
    """Counts from one `create_pretraining_data` run.

    Attributes:
        documents: documents with at least one non-empty tokenized sentence (used).
        documents_skipped: documents without any token (empty, blank or unknown text).
        sentences: non-empty tokenized sentences used.
        document_passes: documents x dupe_factor.
        short_target_passes: document passes that used a shorter random target length.
        examples: examples written.
        random_next_examples: examples whose segment B comes from another document (label 1).
        masked_lm_predictions: masked positions over all examples.
        output_files: the files written.
    """

    documents: int
    documents_skipped: int
    sentences: int
    document_passes: int
    short_target_passes: int
    examples: int
    random_next_examples: int
    masked_lm_predictions: int
    output_files: tuple[str, ...]


def create_pretraining_data(
    documents: Sequence[Sequence[str]],
    vocabulary: str | Sequence[str],
    output_files: str | Sequence[str],
    *,
    lower_case: bool = True,
    max_seq_length: int = 128,
    max_predictions_per_seq: int = 20,
    masked_lm_prob: float = 0.15,
    short_seq_prob: float = 0.1,
    dupe_factor: int = 10,
    whole_word_masking: bool = False,
    seed: int = 12345,
    batch_size: int = 1024,
    progress: bool = False,
) -> PretrainingDataStats:
    """Writes BERT pre-training examples for a corpus (the `create_pretraining_data.py` job).

    Args:
        documents: the corpus, a list of documents, each a list of sentences (str).
        vocabulary: path of a WordPiece `vocab.txt` or the list of its tokens.
        output_files: one output path, a comma-separated list or a list of paths; examples are
            distributed round-robin. Missing directories are created. All outputs are checked
            (`check_output_files`) before any work, written under temporary names and published
            together when every one is complete: a failure leaves no output created or replaced.
        lower_case: lower-case and strip accents (uncased vocabularies). Words longer than 200
            characters become [UNK], as in the original tool.
        max_seq_length: tokens per example including [CLS] and two [SEP] (>= 5).
        max_predictions_per_seq: maximum masked positions per example.
        masked_lm_prob: fraction of tokens selected for masked-LM prediction.
        short_seq_prob: probability of a shorter random target length per document pass.
        dupe_factor: passes over the corpus, each with new pairs and masks.
        whole_word_masking: select whole words (all their WordPieces) for masking.
        seed: seed of every random draw (pairs, shuffling, masks).
        batch_size: sentences tokenized / examples masked per batch.
        progress: show progress bars.

    Returns:
        The run's `PretrainingDataStats`.

    Raises:
        ValueError: a bad argument, an output that cannot be written (named), or a corpus
            without any token.
    """
    output_files = check_output_files(output_files)
    if max_seq_length < 5:
        raise ValueError(f"max_seq_length must be at least 5 ([CLS] A [SEP] B [SEP]), got {max_seq_length}.")
    if max_predictions_per_seq < 1:
        raise ValueError(f"max_predictions_per_seq must be at least 1, got {max_predictions_per_seq}.")
    if not 0.0 < masked_lm_prob <= 1.0:
        raise ValueError(f"masked_lm_prob must be in (0, 1], got {masked_lm_prob}.")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}.")
    if dupe_factor < 1:
        raise ValueError(f"dupe_factor must be at least 1, got {dupe_factor}.")
    tokenizer = BertTokenizer(vocabulary, lower_case=lower_case, max_chars_per_token=200)
    with contextlib.ExitStack() as stack:
        # The writers close before the temporaries are published (the stack unwinds in reverse order).
        # check_output_files has probed every output folder, so opening the writers is not checked again.
        temporaries = stack.enter_context(atomic_write(*output_files))
        writers = [stack.enter_context(tf.io.TFRecordWriter(temporary)) for temporary in temporaries]
        token_documents, skipped = tokenize_documents(documents, tokenizer, batch_size, progress)
        if not token_documents:
            raise ValueError(
                f"The corpus has no text: all {len(documents)} documents are empty or produce no tokens."
            )
        logging.info("Tokenized %d documents (%d skipped without tokens).", len(token_documents), skipped)
        pairs, short_passes = create_pair_instances(
            token_documents, max_seq_length, dupe_factor, short_seq_prob, random.Random(seed)
        )
        masker = MaskedLMMasker.from_tokenizer(
            tokenizer,
            selection_rate=masked_lm_prob,
            max_predictions_per_seq=max_predictions_per_seq,
            whole_word_masking=whole_word_masking,
            seed=seed,
        )
        masked = 0  # Examples are masked in batches and written round-robin.
        with tqdm(total=len(pairs), unit="example", desc="Writing", disable=not progress) as bar:
            for start in range(0, len(pairs), batch_size):
                batch = pairs[start : start + batch_size]
                records, batch_masked = _masked_examples(batch, tokenizer, masker, max_seq_length)
                for i, record in enumerate(records):
                    writers[(start + i) % len(writers)].write(record)
                masked += batch_masked
                bar.update(len(batch))
    stats = PretrainingDataStats(
        documents=len(token_documents),
        documents_skipped=skipped,
        sentences=sum(len(d) for d in token_documents),
        document_passes=len(token_documents) * dupe_factor,
        short_target_passes=short_passes,
        examples=len(pairs),
        random_next_examples=sum(p.is_random_next for p in pairs),
        masked_lm_predictions=masked,
        output_files=tuple(output_files),
    )
    logging.info("Wrote %d examples to %d file(s).", stats.examples, len(output_files))
    return stats


def tokenize_documents(
    documents: Sequence[Sequence[str]],
    tokenizer: BertTokenizer,
    batch_size: int = 1024,
    progress: bool = False,
) -> tuple[list[list[list[int]]], int]:
    """Tokenizes every sentence in a `tf.data` pipeline, dropping sentences without tokens.

    Args:
        documents, batch_size, progress: as for `create_pretraining_data`.
        tokenizer: the `BertTokenizer` to apply.

    Returns:
        (token_documents, skipped): the documents that keep at least one sentence, each a list
        of sentences of token ids (int), and the number of documents dropped.
    """
    sentences = [sentence for document in documents for sentence in document]
    token_ids: list[list[int]] = []
    batches = tf.data.Dataset.from_tensor_slices(tf.constant(sentences, tf.string)).batch(batch_size)
    batches = batches.map(tokenizer, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    with tqdm(total=len(sentences), unit="sentence", desc="Tokenizing", disable=not progress) as bar:
        for ragged in batches:
            token_ids += ragged.to_list()
            bar.update(int(ragged.nrows()))
    sentence_ids = iter(token_ids)  # zip takes one per sentence, stopping at the document's end
    kept = [[ids for _, ids in zip(document, sentence_ids) if ids] for document in documents]
    token_documents = [document for document in kept if document]
    return token_documents, len(documents) - len(token_documents)


def _masked_examples(
    pairs: Sequence[PairInstance], tokenizer: BertTokenizer, masker: MaskedLMMasker, max_seq_length: int
) -> tuple[list[bytes], int]:
    """Packs, masks and serializes a batch of pairs; returns (records, masked positions)."""
    input_ids = np.full((len(pairs), max_seq_length), tokenizer.pad_id, np.int32)
    segment_ids = np.zeros((len(pairs), max_seq_length), np.int32)
    input_mask = np.zeros((len(pairs), max_seq_length), np.int32)
    for row, pair in enumerate(pairs):
        tokens = [tokenizer.cls_id, *pair.tokens_a, tokenizer.sep_id, *pair.tokens_b, tokenizer.sep_id]
        input_ids[row, : len(tokens)] = tokens
        segment_ids[row, len(pair.tokens_a) + 2 : len(tokens)] = 1
        input_mask[row, : len(tokens)] = 1
    outputs = {name: value.numpy() for name, value in masker(tf.constant(input_ids)).items()}
    records = [
        serialize_example(
            input_ids=outputs["input_word_ids"][row],
            input_mask=input_mask[row],
            segment_ids=segment_ids[row],
            masked_lm_positions=outputs["masked_lm_positions"][row],
            masked_lm_ids=outputs["masked_lm_ids"][row],
            masked_lm_weights=outputs["masked_lm_weights"][row],
            next_sentence_label=int(pair.is_random_next),
        )
        for row, pair in enumerate(pairs)
    ]
    return records, int(np.count_nonzero(outputs["masked_lm_weights"]))


def check_output_files(paths: str | Sequence[str]) -> list[str]:
    """Checks that every output path can be written, before any work starts.

    Missing parent folders are created (as the write would); each folder is probed by creating
    and removing a hidden temporary file.

    Args:
        paths: one path, a comma-separated list or a list of paths (local or `tf.io.gfile`).

    Returns:
        The paths, stripped, in order.

    Raises:
        ValueError: no path, repeated paths, or a path that is an existing folder, lies under a
            file, or cannot be written (each message names the path).
    """
    if isinstance(paths, str):
        paths = paths.split(",")
    paths = [os.fspath(p).strip() for p in paths if os.fspath(p).strip()]
    if not paths:
        raise ValueError("No output file given.")
    if len(set(paths)) != len(paths):
        raise ValueError(f"Output files must be distinct, got {paths}.")
    for path in paths:
        if tf.io.gfile.isdir(path):
            raise ValueError(f"Output file {path} is an existing folder.")
        probe = temporary_path(path)
        try:
            directory = os.path.dirname(path)
            if directory:
                tf.io.gfile.makedirs(directory)
            with tf.io.gfile.GFile(probe, "w") as f:
                f.write("")  # GFile creates the file on its first write
            tf.io.gfile.remove(probe)
        except (tf.errors.OpError, OSError) as e:
            reason = op_error_text(e) if isinstance(e, tf.errors.OpError) else e.strerror or str(e)
            raise ValueError(f"Output file {path} cannot be written: {reason}.") from None
    return paths

