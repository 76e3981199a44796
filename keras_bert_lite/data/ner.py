"""CoNLL-2003 named-entity data: reading, word-piece label alignment, entity-level F1.

Each word is labelled at its first word piece (as in the paper); its other pieces, [CLS],
[SEP] and padding carry sample weight 0. Alignment runs in the TensorFlow graph
(`tag_inputs`), the same function the exported SavedModel uses on raw text.

Example:

    >>> tags = CONLL2003_TAGS
    >>> train = read_conll("eng.train", tags=tags)
    >>> ds = ner_dataset(train, preprocessor, tags, batch_size=32, is_training=True)
    >>> model.fit(ds)
    >>> entity_f1([s.tags for s in dev], predicted_tags)["f1"]
"""

from __future__ import annotations

import collections
import dataclasses
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.bad_input import BadRecords

CONLL2003_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")


@dataclasses.dataclass
class TaggedSentence:
    """A sentence of words with one tag each; `line` is the file line of its first word."""

    words: list[str]
    tags: list[str]
    line: int = 0


def read_conll(
    path: str | os.PathLike,
    tags: Sequence[str] | None = CONLL2003_TAGS,
    tag_column: int = -1,
    on_error: str = "raise",
) -> list[TaggedSentence]:
    """Reads a CoNLL file: one `word ... tag` line per word, blank lines between sentences.

    `-DOCSTART-` lines are ignored. Columns are separated by whitespace.

    Args:
        path: the file (local or any `tf.io.gfile` path).
        tags: the allowed tags (None accepts any).
        tag_column: column of the tag (-1: the last, as in CoNLL-2003's NER column).
        on_error: "raise" at the first bad line, or "skip" the sentence containing it with a
            logged warning. Bad lines: fewer than 2 columns, no such tag column, an unknown
            tag, text that is not UTF-8.

    Returns:
        The sentences, in file order.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file and line of a bad record (on_error="raise"), or a file
            without any sentence.
    """
    path = os.fspath(path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"CoNLL file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        raw_lines = f.read().splitlines()
    allowed = None if tags is None else set(tags)
    bad = BadRecords(path, on_error)
    sentences: list[TaggedSentence] = []
    current = TaggedSentence([], [])
    broken = False

    def finish():
        if current.words and not broken:
            sentences.append(current)

    for line_number, raw in enumerate(raw_lines, start=1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as e:
            bad(line_number, f"not valid UTF-8 ({e.reason} at byte {e.start}).")
            broken = True
            continue
        if not line or line.startswith("-DOCSTART-"):
            finish()
            current, broken = TaggedSentence([], [], line_number + 1), False
            continue
        problem = _check_line(line.split(), tag_column, allowed)
        if problem:
            bad(line_number, problem)
            broken = True
            continue
        fields = line.split()
        if not current.words:
            current.line = line_number
        current.words.append(fields[0])
        current.tags.append(fields[tag_column])
    finish()
    if not sentences:
        raise ValueError(f"{path}: no usable sentences ({len(bad.messages)} bad lines skipped).")
    return sentences


def _check_line(fields: list[str], tag_column: int, allowed: set[str] | None) -> str | None:
    if len(fields) < 2:
        return f"expected 'word ... tag' (at least 2 columns), found {len(fields)} column(s)."
    if not -len(fields) <= tag_column < len(fields):
        return f"no tag column {tag_column} in a line of {len(fields)} columns."
    tag = fields[tag_column]
    if allowed is not None and tag not in allowed:
        return f"tag {tag!r} is not one of {sorted(allowed)}."
    return None


# ------------------------------------------------------------------------ in-graph alignment
def tag_inputs(words: tf.RaggedTensor, tokenizer, packer) -> tuple[dict, tf.RaggedTensor]:
    """Packs words into model inputs and finds each word's first piece.

    A word the tokenizer turns into nothing (e.g. only control characters) becomes [UNK], so
    every word keeps a position.

    Args:
        words: tf.string ragged [batch, (words)].
        tokenizer: `BertTokenizer` (tf.string [N] -> ragged ids [N, (pieces)]).
        packer: `BertPackInputs` (adds [CLS]/[SEP], truncates, pads to its `seq_length`).

    Returns:
        (features, positions): the three int32 [batch, seq_length] model inputs, and int32
        ragged [batch, (words)] index of each word's first piece in the packed sequence, -1 for
        words cut off by truncation.
    """
    pieces = tokenizer(words.flat_values)
    empty = tf.cast(tf.equal(pieces.row_lengths(), 0), tf.int64)
    unk = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(empty)], tf.constant(tokenizer.unk_id, pieces.dtype)), empty
    )
    pieces = tf.concat([pieces, unk], axis=1)
    features = packer(tf.RaggedTensor.from_row_splits(pieces, words.row_splits))
    counts = tf.cast(pieces.row_lengths(), tf.int32)
    first = words.with_flat_values(counts)
    first = tf.cumsum(first, axis=1, exclusive=True) + 1  # after [CLS]
    positions = tf.where(first < packer.seq_length - 1, first, -1)
    return features, positions


def _word_labels(positions: tf.RaggedTensor, label_ids: tf.RaggedTensor, seq_length: int):
    """Dense [batch, seq] labels and weights: a word's label at its first piece, weight 1 there."""
    keep = positions.flat_values >= 0
    rows = tf.cast(positions.value_rowids(), tf.int32)
    indices = tf.boolean_mask(tf.stack([rows, positions.flat_values], axis=1), keep)
    shape = tf.stack([positions.nrows(out_type=tf.int32), seq_length])
    labels = tf.scatter_nd(indices, tf.boolean_mask(label_ids.flat_values, keep), shape)
    weights = tf.scatter_nd(indices, tf.ones_like(indices[:, 0], tf.float32), shape)
    return labels, weights


def _ragged_words(sentences: list[TaggedSentence]) -> tf.RaggedTensor:
    return tf.RaggedTensor.from_row_lengths(
        tf.constant([w for s in sentences for w in s.words], tf.string),
        [len(s.words) for s in sentences],
    )


def ner_dataset(
    sentences: list[TaggedSentence],
    preprocessor,
    tags: Sequence[str],
    batch_size: int,
    is_training: bool,
    seed: int | None = None,
) -> tf.data.Dataset:
    """`(features, labels, sample_weights)` batches for `BertTokenClassifier.fit`.

    Args:
        sentences: from `read_conll`.
        preprocessor: a `BertPreprocessor` (its `tokenizer` and `packer` are used).
        tags: tag strings in class-id order.
        batch_size: sentences per batch.
        is_training: shuffle with `seed`.

    Returns:
        Dataset of (features, labels int32 [batch, seq], weights float32 [batch, seq]).

    Raises:
        ValueError: a sentence has a tag not in `tags` (naming its line).
    """
    index = {t: i for i, t in enumerate(tags)}
    label_ids = []
    for sentence in sentences:
        unknown = [t for t in sentence.tags if t not in index]
        if unknown:
            raise ValueError(f"Sentence at line {sentence.line}: tag {unknown[0]!r} is not one of {list(tags)}.")
        label_ids.extend(index[t] for t in sentence.tags)
    words = _ragged_words(sentences)
    labels = words.with_flat_values(tf.constant(label_ids, tf.int32))
    ds = tf.data.Dataset.from_tensor_slices((words, labels))
    if is_training:
        ds = ds.shuffle(len(sentences), seed=seed, reshuffle_each_iteration=True)
    ds = ds.ragged_batch(batch_size)
    seq_length = preprocessor.packer.seq_length

    def align(batch_words, batch_labels):
        features, positions = tag_inputs(batch_words, preprocessor.tokenizer, preprocessor.packer)
        dense_labels, weights = _word_labels(positions, batch_labels, seq_length)
        return features, dense_labels, weights

    return ds.map(align, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def word_positions(sentences: list[TaggedSentence], preprocessor, chunk: int = 512) -> list[np.ndarray]:
    """Each sentence's first-piece positions (as `tag_inputs`, -1 for truncated words)."""
    result = []
    for i in range(0, len(sentences), chunk):
        _, positions = tag_inputs(
            _ragged_words(sentences[i : i + chunk]), preprocessor.tokenizer, preprocessor.packer
        )
        result += [np.asarray(p, "int32") for p in positions.to_list()]
    return result


def predicted_tags(
    logits: np.ndarray, positions: list[np.ndarray], tags: Sequence[str], truncated_tag: str = "O"
) -> list[list[str]]:
    """Word tags from token logits [N, seq, num_tags]: the argmax at each word's first piece.

    Words cut off by truncation (position -1) get `truncated_tag`.
    """
    ids = np.argmax(np.asarray(logits), axis=-1)
    return [
        [tags[ids[n, p]] if p >= 0 else truncated_tag for p in sentence_positions]
        for n, sentence_positions in enumerate(positions)
    ]


# ------------------------------------------------------------------------------ entity F1
def entity_spans(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entities as (type, start, end) word spans, end exclusive, with conlleval's rules.

    Works for IOB1 (CoNLL-2003's own: I- starts an entity unless it continues one of the
    same type) and IOB2/BIO (B- starts every entity). Unprefixed tags other than "O" are
    treated as I- tags.
    """
    spans, kind, start = [], None, 0
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, entity = tag.partition("-") if "-" in tag else ("I", "", tag)
        if tag == "O":
            prefix, entity = "O", None
        if kind is not None and (prefix in ("O", "B") or entity != kind):
            spans.append((kind, start, i))
            kind = None
        if prefix != "O" and kind is None:
            kind, start = entity, i
    return spans


def entity_f1(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """CoNLL entity-level precision, recall and F1 (an entity counts only if type and both
    boundaries match exactly; a partial overlap is both a false positive and a false negative).

    Args:
        gold: gold tags, one list per sentence.
        predicted: predicted tags, same lengths.

    Returns:
        {"precision", "recall", "f1" (fractions), "num_gold", "num_predicted", "num_correct",
        "per_type": {type: {"precision", "recall", "f1", "num_gold"}}}.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted ones.")
    counts = collections.defaultdict(lambda: [0, 0, 0])  # type -> [gold, predicted, correct]
    for n, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"Sentence {n}: {len(g)} gold tags but {len(p)} predicted tags.")
        gold_spans, predicted_spans = set(entity_spans(g)), set(entity_spans(p))
        for kind, *_ in gold_spans:
            counts[kind][0] += 1
        for kind, *_ in predicted_spans:
            counts[kind][1] += 1
        for kind, *_ in gold_spans & predicted_spans:
            counts[kind][2] += 1

    def scores(num_gold, num_predicted, num_correct):
        precision = num_correct / num_predicted if num_predicted else 0.0
        recall = num_correct / num_gold if num_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": precision, "recall": recall, "f1": f1}

    totals = [sum(c[i] for c in counts.values()) for i in range(3)]
    result = scores(*totals)
    result.update(num_gold=totals[0], num_predicted=totals[1], num_correct=totals[2])
    result["per_type"] = {kind: {**scores(*c), "num_gold": c[0]} for kind, c in sorted(counts.items())}
    return result
