"""The main job's data: the built-in corpus, split honestly into training and held-out documents.

Part of the main job, `main_job.py`, which imports it as a sibling module. The main job
pre-trains on the built-in corpus (Python's own documentation and the docstrings of the packages
keras_bert_lite depends on, deduplicated). Every `HELDOUT_EVERY`-th
document is held out for the masked-LM evaluation, and as many more (those at `TASK_OFFSET` of
every `HELDOUT_EVERY`) for the transfer tasks; training sentences that share a run of
`CONTAMINATION_NGRAM` words with a held-out sentence of either kind are dropped, so near-copies of
held-out text (one docstring adapted in two packages) cannot inflate held-out results. Every
document kept out of training is written with its source (`corpus_documents`) for the transfer
tasks, which use no other text. The vocabulary is
learned from the training documents only (a sample of about `VOCAB_SAMPLE_WORDS` words of them);
both sides are tokenized with it and written as pre-training TFRecords in the original format.
The sentences whose predictions are shown after training are chosen here, by `shown_sentences`'s
fixed rule, before any model exists.

Example:

    >>> data = build_demo_data("out", DemoDataSettings(max_seq_length=64, max_predictions_per_seq=10))
    >>> data.train_files, data.heldout_files
    ('out/data/train-*.tfrecord', 'out/data/heldout.tfrecord')
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Sequence

import tensorflow as tf
from absl import logging

from keras_bert_lite.atomic import write_text_atomically
from keras_bert_lite.data import builtin_documents, create_pretraining_data
from keras_bert_lite.data.corpora import DEPENDENCY_PACKAGES, builtin_document_sources, deduplicate_sentences
from keras_bert_lite.text.tokenizer import BertTokenizer
from keras_bert_lite.text.vocab import build_vocab

HELDOUT_EVERY = 10
TASK_OFFSET = HELDOUT_EVERY // 2
CONTAMINATION_NGRAM = 8
TRAIN_SHARDS = 4
# BERT's masking rate, for the held-out data whatever the training data's: its masked-LM accuracy
# then compares across --masked_lm_prob settings and with the paper's figures.
HELDOUT_MASKED_LM_PROB = 0.15
# The vocabulary is learned from about this many words of the training text (every k-th sentence):
# plenty for a few thousand WordPiece tokens, while the learner's time grows with the text.
VOCAB_SAMPLE_WORDS = 200_000
MANIFEST = "manifest.json"
# `shown_sentences`: sentences of this many words.
SHOWN_WORDS = (8, 24)
SHOWN_RULE = (
    f"from evenly spaced held-out documents on, the first sentence of {SHOWN_WORDS[0]}-{SHOWN_WORDS[1]} "
    f"plain words, masking the middle one of its words that are one vocabulary token each; chosen "
    "when the data was built, before training"
)


@dataclasses.dataclass(frozen=True)
class DemoDataSettings:
    """What the main job's data depends on; data built with other settings is not reused.

    Attributes:
        packages: installed packages whose docstrings join Python's documentation.
        max_documents: use only the first N documents of the deduplicated corpus (0: all).
        vocab_size: size of the WordPiece vocabulary learned from the training documents.
        vocab_file: use this vocabulary instead of learning one.
        lower_case: lower-case text (uncased vocabulary).
        max_seq_length: tokens per example.
        max_predictions_per_seq: masked positions per example, at most.
        masked_lm_prob: fraction of each training example's tokens masked (up to
            max_predictions_per_seq); the held-out data is masked at `HELDOUT_MASKED_LM_PROB`.
        whole_word_masking: mask whole words (all their WordPieces) in the training data; the
            held-out data keeps BERT's token masking, so its figures compare across settings.
        dupe_factor: passes over the training documents, each with new pairs and masks.
        num_shown: sentences chosen for the prediction printout.
        seed: seed of pair generation and masking.
    """

    packages: tuple[str, ...] = DEPENDENCY_PACKAGES
    max_documents: int = 0
    vocab_size: int = 2000
    vocab_file: str | None = None
    lower_case: bool = True
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    whole_word_masking: bool = False
    dupe_factor: int = 5
    num_shown: int = 4
    seed: int = 12345


@dataclasses.dataclass(frozen=True)
class DemoData:
    """Files and facts of the built data.

    Attributes:
        vocab_file: the vocabulary the TFRecords were written with.
        train_files: glob of the training TFRecords.
        heldout_files: path of the held-out TFRecord (masked once, dupe_factor 1).
        task_documents_file: every document kept out of pre-training (masked-LM held-out and
            task documents) with its source, as JSON, for the transfer tasks (`read_task_documents`).
        shown_sentences: held-out sentences for the prediction printout: (sentence, index of
            the word to mask) pairs.
        corpus: counts: documents, training/held-out documents and words, dropped sentences.
    """

    vocab_file: str
    train_files: str
    heldout_files: str
    task_documents_file: str
    shown_sentences: tuple[tuple[str, int], ...]
    corpus: dict


def split_heldout(
    documents: Sequence[Sequence[str]], every: int = HELDOUT_EVERY, ngram: int = CONTAMINATION_NGRAM,
    task_offset: int = TASK_OFFSET,
) -> tuple[list[list[str]], list[list[str]], list[int], int]:
    """Holds out every `every`-th document twice over and decontaminates the training side.

    Args:
        documents: deduplicated documents, each a list of sentences (str).
        every: documents 0, every, 2 * every, ... are held out (for the masked-LM evaluation).
        ngram: a training sentence sharing any run of this many words (lower-cased, punctuation
            ignored) with a held-out sentence of either kind is dropped.
        task_offset: documents task_offset, task_offset + every, ... are held out too (for the
            transfer tasks); in [1, every).

    Returns:
        (training documents, held-out documents, indices into `documents` of every document kept
        out of training (either kind, in order), number of training sentences dropped); training
        documents left with fewer than two sentences are dropped.
    """
    if every < 2 or ngram < 1 or not 0 < task_offset < every:
        raise ValueError(f"every must be >= 2, ngram >= 1 and task_offset in [1, every), got {every}, {ngram} "
                         f"and {task_offset}.")
    heldout = [list(d) for d in documents[::every]]
    kept_out = [i for i in range(len(documents)) if i % every in (0, task_offset)]
    heldout_ngrams = {g for i in kept_out for s in documents[i] for g in _ngrams(s, ngram)}
    train, dropped = [], 0
    for index, document in enumerate(documents):
        if index % every in (0, task_offset):
            continue
        kept = [s for s in document if heldout_ngrams.isdisjoint(_ngrams(s, ngram))]
        dropped += len(document) - len(kept)
        if len(kept) >= 2:
            train.append(kept)
    return train, heldout, kept_out, dropped


def masked_word_position(tokenizer: BertTokenizer, sentence: str, index: int) -> int:
    """The token position of the `index`-th whitespace-separated word of `sentence` once packed
    as `[CLS] sentence [SEP]` (BERT splits words independently, so its prefix gives it)."""
    prefix = " ".join(sentence.split()[:index])
    return 1 + int(tokenizer(tf.constant([prefix])).row_lengths()[0])


def shown_sentences(
    heldout: Sequence[Sequence[str]], count: int, tokenizer: BertTokenizer, seq_length: int
) -> list[tuple[str, int]]:
    """Held-out sentences to show predictions for, chosen by a fixed rule (`SHOWN_RULE`).

    Starting at `count` evenly spaced held-out documents, the first sentence (not yet chosen) of
    `SHOWN_WORDS` words that are all plain words (ASCII letters, with trailing punctuation), and
    the middle one of its words that are a single token of the vocabulary (so one [MASK] stands
    for it; short words too, as the masked-LM accuracy counts every kind of token) within the first `seq_length` tokens. Fixed before training, so
    the examples are not picked after seeing the predictions.

    Args:
        heldout: held-out documents, each a list of sentences (str).
        count: how many sentences to choose.
        tokenizer: the `BertTokenizer` of the training data.
        seq_length: the length examples are packed to.

    Returns:
        Up to `count` (sentence, index of the word to mask among its whitespace-separated words)
        pairs.
    """
    tokens = set(tokenizer.vocabulary)

    def masked_word(sentence: str) -> int | None:
        words = [w.rstrip(".,;:") for w in sentence.split()]
        plain = all(w.isascii() and w.isalpha() for w in words)
        if not plain or not SHOWN_WORDS[0] <= len(words) <= SHOWN_WORDS[1]:
            return None
        candidates = [i for i, w in enumerate(words)
                      if (w.lower() if tokenizer.lower_case else w) in tokens]
        if not candidates:
            return None
        index = candidates[len(candidates) // 2]
        return index if masked_word_position(tokenizer, sentence, index) < seq_length - 1 else None

    sentences = [s for document in heldout for s in document]
    starts = [sum(len(d) for d in heldout[: i * len(heldout) // count]) for i in range(count)]
    chosen: list[tuple[str, int]] = []
    for start in starts:
        for sentence in sentences[start:]:
            index = masked_word(sentence)
            if index is not None and all(sentence != s for s, _ in chosen):
                chosen.append((sentence, index))
                break
    return chosen


def build_demo_data(output_dir: str, settings: DemoDataSettings, progress: bool = True,
                    subdir: str = "data") -> DemoData:
    """Builds (or reuses) the vocabulary and TFRecords of the main job under `output_dir`.

    `subdir` (default "data") is the data folder in `output_dir`: another one holds data of other
    lengths (the main job's longer sequences for its last steps, with the first data's vocabulary).

    Writes `vocab.txt` (unless `settings.vocab_file`), `data/train-{0..3}.tfrecord`,
    `data/heldout.tfrecord`, `data/task_documents.json` and, last, `data/manifest.json`, all
    atomically; the manifest marks the data complete and records `settings`, so a rerun with the
    same settings reuses the files and one with other settings rebuilds them.

    Raises:
        ValueError: the output folder has training checkpoints but data of other settings (the
            run could not resume on it), or the corpus is too small to hold out documents.
    """
    data_dir = os.path.join(output_dir, subdir)
    manifest_file = os.path.join(data_dir, MANIFEST)
    vocab_file = settings.vocab_file or os.path.join(output_dir, "vocab.txt")
    train_files = os.path.join(data_dir, "train-*.tfrecord")
    heldout_files = os.path.join(data_dir, "heldout.tfrecord")
    task_documents_file = os.path.join(data_dir, "task_documents.json")
    recorded = dataclasses.asdict(settings)
    recorded["packages"] = list(settings.packages)
    if tf.io.gfile.exists(manifest_file):
        with tf.io.gfile.GFile(manifest_file) as f:
            manifest = json.load(f)
        written = manifest.get("settings")
        # A setting added since the manifest was written had its default then.
        if written is not None and {**dataclasses.asdict(DemoDataSettings()), **written} == recorded:
            logging.info("Reusing the vocabulary and data in %s.", data_dir)
            shown = tuple(tuple(pair) for pair in manifest["shown_sentences"])
            return DemoData(vocab_file, train_files, heldout_files, task_documents_file, shown,
                            manifest["corpus"])
        if tf.io.gfile.exists(os.path.join(output_dir, "checkpoints")):
            raise ValueError(
                f"{output_dir} has checkpoints but its data was made with other settings; use a new "
                "--output_dir or the same flags as before."
            )
    documents, sources = corpus_documents(settings.packages)
    if settings.max_documents > 0:
        documents, sources = documents[: settings.max_documents], sources[: settings.max_documents]
    train, heldout, kept_out, dropped = split_heldout(documents)
    if not train or not heldout:
        raise ValueError(f"The corpus has too few documents ({len(documents)}) to hold out every "
                         f"{HELDOUT_EVERY}th; use more --max_documents.")
    corpus = dict(
        documents=len(documents), train_documents=len(train), heldout_documents=len(heldout),
        task_documents=len(kept_out) - len(heldout), train_words=_words(train), heldout_words=_words(heldout),
        train_sentences_dropped=dropped,
    )
    logging.info("Built-in corpus: %s.", corpus)
    if not settings.vocab_file:
        sentences = [s for d in train for s in d]
        every = -(-corpus["train_words"] // VOCAB_SAMPLE_WORDS)
        vocabulary = build_vocab(sentences[::every], vocab_size=settings.vocab_size, lower_case=settings.lower_case)
        write_text_atomically(vocab_file, "".join(token + "\n" for token in vocabulary))
    common = dict(lower_case=settings.lower_case, max_seq_length=settings.max_seq_length,
                  max_predictions_per_seq=settings.max_predictions_per_seq, seed=settings.seed, progress=progress)
    shards = [train_files.replace("*", str(i)) for i in range(TRAIN_SHARDS)]
    create_pretraining_data(train, vocab_file, shards, dupe_factor=settings.dupe_factor,
                            masked_lm_prob=settings.masked_lm_prob,
                            whole_word_masking=settings.whole_word_masking, **common)
    create_pretraining_data(heldout, vocab_file, [heldout_files], dupe_factor=1,
                            masked_lm_prob=HELDOUT_MASKED_LM_PROB, **common)
    task_documents = [dict(source=sources[i], sentences=documents[i]) for i in kept_out]
    write_text_atomically(task_documents_file, json.dumps(task_documents) + "\n")
    tokenizer = BertTokenizer(vocab_file, lower_case=settings.lower_case)
    shown = tuple(shown_sentences(heldout, settings.num_shown, tokenizer, settings.max_seq_length))
    manifest = dict(settings=recorded, corpus=corpus, shown_sentences=[list(pair) for pair in shown])
    write_text_atomically(manifest_file, json.dumps(manifest, indent=1) + "\n")
    return DemoData(vocab_file, train_files, heldout_files, task_documents_file, shown, corpus)


def corpus_documents(packages: Sequence[str]) -> tuple[list[list[str]], list[str]]:
    """The built-in corpus of `packages`, deduplicated (`deduplicate_sentences`), and the source of
    each of its documents (`builtin_document_sources`: "json.decoder", "numpy._core.fromnumeric")."""
    documents = builtin_documents(packages)
    original_sources = builtin_document_sources(packages)
    # Deduplication keeps first occurrences only: a kept document's first sentence occurs first in
    # the document it was kept from.
    first_seen: dict[str, int] = {}
    for index, document in enumerate(documents):
        for sentence in document:
            first_seen.setdefault(_sentence_key(sentence), index)
    kept = deduplicate_sentences(documents)
    return kept, [original_sources[first_seen[_sentence_key(d[0])]] for d in kept]


def read_task_documents(path: str) -> tuple[list[list[str]], list[str]]:
    """The documents kept out of pre-training that `build_demo_data` wrote to `path`: (documents,
    each a list of sentences; the source of each)."""
    with tf.io.gfile.GFile(path) as f:
        records = json.load(f)
    return [r["sentences"] for r in records], [r["source"] for r in records]


def _sentence_key(sentence: str) -> str:
    return " ".join(sentence.lower().split())  # as deduplicate_sentences compares sentences


def _ngrams(sentence: str, n: int) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", sentence.lower())
    return {tuple(words[i: i + n]) for i in range(len(words) - n + 1)}


def _words(documents: Sequence[Sequence[str]]) -> int:
    return sum(len(s.split()) for d in documents for s in d)
