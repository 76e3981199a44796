"""Word-level tags on word pieces: model inputs, labels and predictions for token classification.

Each word is labelled at its first word piece (as in the paper); its other pieces, [CLS],
[SEP] and padding carry sample weight 0. Alignment runs in the TensorFlow graph
(`tag_inputs`), the same function the exported SavedModel uses on raw text. Example: the `ner`
package docstring.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.ner.conll import TaggedSentence


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
    # A word without pieces takes [UNK] (appended to the flat pieces) by one gather: a ragged concat
    # along axis 1 would make oneDNN log a false "DT_INT64" error on CPUs without AVX-512.
    lengths = pieces.row_lengths()
    kept = tf.maximum(lengths, 1)
    rows = tf.repeat(tf.range(tf.size(kept, tf.int64)), kept)
    offsets = tf.range(tf.reduce_sum(kept)) - tf.gather(tf.cumsum(kept, exclusive=True), rows)
    source = tf.where(tf.gather(lengths, rows) > 0, tf.gather(pieces.row_starts(), rows) + offsets,
                      tf.size(pieces.flat_values, tf.int64))
    unk = tf.constant([tokenizer.unk_id], pieces.dtype)
    pieces = tf.RaggedTensor.from_row_lengths(tf.gather(tf.concat([pieces.flat_values, unk], 0), source), kept)
    features = packer(tf.RaggedTensor.from_row_splits(pieces, words.row_splits))
    counts = tf.cast(pieces.row_lengths(), tf.int32)
    first = words.with_flat_values(counts)
    first = tf.cumsum(first, axis=1, exclusive=True) + 1  # after [CLS]
    positions = tf.where(first < packer.seq_length - 1, first, -1)
    return features, positions


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
        """Dense [batch, seq] labels and weights: each word's label at its first piece, weight 1 there."""
        features, positions = tag_inputs(batch_words, preprocessor.tokenizer, preprocessor.packer)
        keep = positions.flat_values >= 0
        rows = tf.cast(positions.value_rowids(), tf.int32)
        indices = tf.boolean_mask(tf.stack([rows, positions.flat_values], axis=1), keep)
        shape = tf.stack([positions.nrows(out_type=tf.int32), seq_length])
        labels = tf.scatter_nd(indices, tf.boolean_mask(batch_labels.flat_values, keep), shape)
        weights = tf.scatter_nd(indices, tf.ones_like(indices[:, 0], tf.float32), shape)
        return features, labels, weights

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


def predicted_tags(logits: np.ndarray, positions: list[np.ndarray], tags: Sequence[str]) -> list[list[str]]:
    """Word tags from token logits [N, seq, num_tags]: the argmax at each word's first piece.

    Words cut off by truncation (position -1) get "O".
    """
    ids = np.argmax(np.asarray(logits), axis=-1)
    return [
        [tags[ids[n, p]] if p >= 0 else "O" for p in sentence_positions]
        for n, sentence_positions in enumerate(positions)
    ]


def word_windows(piece_counts: Sequence[int], max_pieces: int, stride: int) -> list[tuple[int, int, np.ndarray]]:
    """Overlapping windows over a sentence's words for texts longer than the model's sequence, and
    which window labels each word (as SQuAD's doc-stride windows and "max context" rule).

    Args:
        piece_counts: the number of word pieces of each word (at least 1).
        max_pieces: pieces a window holds (the sequence length less [CLS] and [SEP]).
        stride: pieces from one window's start to the next (each window starts at a word: the
            first at least `stride` pieces on, but never past the previous window's end).

    Returns:
        One `(first, end, labels)` per window: its words `[first, end)` (all that fit; a word
        longer than `max_pieces` alone, truncated) and a bool [end - first] mask of the words it
        labels: each word once, in the window where it has the most context on its nearer side.
    """
    starts = np.concatenate([[0], np.cumsum(piece_counts, dtype="int64")])
    num_words, ranges, first = len(piece_counts), [], 0
    while True:
        end = int(np.searchsorted(starts, starts[first] + max_pieces, side="right")) - 1
        end = min(max(end, first + 1), num_words)
        ranges.append((first, end))
        if end >= num_words:
            break
        first = min(max(int(np.searchsorted(starts, starts[first] + stride)), first + 1), end)
    best = np.full(num_words, -1)
    best_score = np.full(num_words, -np.inf)
    for index, (first, end) in enumerate(ranges):
        words = np.arange(first, end)
        context = np.minimum(starts[words] - starts[first], starts[end] - starts[words + 1])
        score = context + 0.01 * (starts[end] - starts[first])  # ties: the longer window (as SQuAD's)
        better = score > best_score[words]
        best[words[better]], best_score[words[better]] = index, score[better]
    return [(first, end, best[first:end] == index) for index, (first, end) in enumerate(ranges)]
