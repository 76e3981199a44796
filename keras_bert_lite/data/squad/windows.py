"""Doc-stride windows over SQuAD contexts, in TensorFlow ops: one definition for training features,
evaluation and the served SavedModel.

A question and its context become windows `[CLS] question [SEP] context tokens [SEP]`, as in the
original BERT `run_squad.py`: the question is cut to `max_query_length` tokens, the context
fills the rest of `seq_length`, and a context too long for one window is covered by windows
whose starts are `doc_stride` tokens apart. A context token seen by several windows counts in
the one that gives it the most context on its nearer side (the original's `_check_is_max_context`).
Being graph ops, the same code builds features for a whole training file and serves raw strings.
"""

from __future__ import annotations

import tensorflow as tf


def squad_windows(
    tokenizer,
    packer,
    questions: tf.Tensor,
    contexts: tf.Tensor,
    max_query_length: int,
    doc_stride: int,
    answer_spans: tf.Tensor | None = None,
    context_index: tf.Tensor | None = None,
) -> dict[str, tf.Tensor]:
    """Every window of every (question, context) pair, W windows in all, in example order.

    Args:
        tokenizer: a `keras_bert_lite.text.BertTokenizer` (its `tokenize_with_offsets` splits words).
        packer: a `keras_bert_lite.text.BertPackInputs`; its `seq_length` S is the window length.
        questions: tf.string [B].
        contexts: tf.string [B], or [C] with `context_index`. They should be valid UTF-8 (byte
            offsets index them).
        max_query_length: question tokens kept.
        doc_stride: tokens between the starts of consecutive windows of one context.
        answer_spans: optional int64 [B, 2], the UTF-8 byte span (end exclusive) of each example's
            answer in its context, -1 where there is none: adds the training labels.
        context_index: optional int [B], the context of each question (questions about one
            paragraph share its tokenization).

    Returns:
        `input_word_ids`, `input_mask`, `input_type_ids`: int32 [W, S], the model inputs.
        `example_index`: int32 [W], the example of each window (non-decreasing).
        `windows_per_example`: int32 [B], at least 1 (a context without tokens gets one window).
        `token_starts`, `token_ends`: int64 [W, S], the byte span in the context of the word of
            each context token, -1 at [CLS], question, [SEP] and padding positions.
        `max_context`: bool [W, S], whether the window gives that context token its most context.
        With `answer_spans`: `start_positions`, `end_positions` int32 [W], the answer's first and
        last token in the window, 0 ([CLS]) when the window does not hold the whole answer; and
        `answer_tokens` int32 [B, 2], the answer's first and last context token (-1 if it covers
        no token).
    """
    seq_length = packer.seq_length
    query = tokenizer(questions)[:, :max_query_length]
    ids, starts, ends = tokenizer.tokenize_with_offsets(contexts)
    if context_index is not None:
        ids, starts, ends = (tf.gather(t, context_index) for t in (ids, starts, ends))
    query_length = tf.cast(query.row_lengths(), tf.int32)
    num_tokens = tf.cast(ids.row_lengths(), tf.int32)
    room = seq_length - 3 - query_length  # context tokens per window
    step = tf.minimum(room, doc_stride)
    count = tf.where(num_tokens > room, (num_tokens - room + step - 1) // step + 1, 1)

    example = tf.repeat(tf.range(tf.size(count)), count)
    window = tf.ragged.range(count).flat_values
    window_room, window_step = tf.gather(room, example), tf.gather(step, example)
    example_tokens = tf.gather(num_tokens, example)
    start = window * window_step
    length = tf.minimum(window_room, example_tokens - start)
    first_token = tf.gather(tf.cast(ids.row_starts(), tf.int32), example)  # in the flat token list

    window_ids = tf.gather(ids.flat_values, tf.ragged.range(start, start + length) + first_token[:, None])
    packed = packer([tf.gather(query, example), window_ids])

    # The context token (index in its context) at every packed position, -1 outside the context.
    column = tf.range(seq_length)[None, :] - (tf.gather(query_length, example) + 2)[:, None]
    in_context = (column >= 0) & (column < length[:, None])
    token = tf.where(in_context, start[:, None] + column, -1)
    flat = tf.where(in_context, first_token[:, None] + token, tf.size(ids.flat_values))

    def at_tokens(values: tf.RaggedTensor) -> tf.Tensor:
        return tf.gather(tf.concat([values.flat_values, [-1]], axis=0), flat)  # -1 outside the context

    windows = {
        **packed,
        "example_index": example,
        "windows_per_example": count,
        "token_starts": at_tokens(starts),
        "token_ends": at_tokens(ends),
        "max_context": _max_context(token, window, tf.gather(count, example), window_step, window_room,
                                    example_tokens),
    }
    if answer_spans is not None:
        windows.update(_labels(answer_spans, starts, ends, example, start, length, seq_length - room - 1))
    return windows


def _max_context(token, window, count, step, room, num_tokens) -> tf.Tensor:
    """bool [W, S]: whether each context token has its maximal context in its window.

    A token's score in a window is min(tokens left of it, tokens right of it) + 0.01 * window
    length, in float64 as in the original; the first window with the highest score wins. Only
    windows at most `room / step` apart share tokens, so those neighbours are all that is compared.

    Args:
        token: int32 [W, S], the index in its context of the token at each position, -1 elsewhere.
        window: int32 [W], each window's index among its example's windows.
        count, step, room, num_tokens: int32 [W], for each window's example: its number of windows,
            the tokens between their starts, the context tokens a window holds, its context tokens.
    """
    in_context = token >= 0
    reach = tf.maximum(tf.reduce_max((room + step - 1) // step), 1) - 1  # 0 for no windows

    def compare(offset, best_score, best_window):
        other = window + offset
        other_start = other * step
        other_length = tf.minimum(room, num_tokens - other_start)
        other_start, other_end = other_start[:, None], (other_start + other_length)[:, None]
        contains = in_context & ((other >= 0) & (other < count))[:, None]
        contains &= (token >= other_start) & (token < other_end)
        score = tf.cast(tf.minimum(token - other_start, other_end - 1 - token), tf.float64)
        score += 0.01 * tf.cast(other_length, tf.float64)[:, None]
        better = contains & (score > best_score)
        return (offset + 1, tf.where(better, score, best_score),
                tf.where(better, tf.broadcast_to(other[:, None], tf.shape(token)), best_window))

    _, _, best_window = tf.while_loop(
        lambda offset, *_: offset <= reach,
        compare,
        (-reach, tf.fill(tf.shape(token), tf.constant(-float("inf"), tf.float64)), tf.fill(tf.shape(token), -1)),
    )
    return in_context & (best_window == window[:, None])


def _labels(answer_spans, starts, ends, example, start, length, offset) -> dict[str, tf.Tensor]:
    """Answer positions per window from each example's answer byte span (see `squad_windows`)."""
    answer_spans = tf.cast(answer_spans, tf.int64)
    rows = starts.value_rowids()
    byte_start, byte_end = tf.gather(answer_spans[:, 0], rows), tf.gather(answer_spans[:, 1], rows)
    covered = (ends.flat_values > byte_start) & (starts.flat_values < byte_end) & (byte_start >= 0)
    position = tf.cast(tf.ragged.range(starts.row_lengths()).flat_values, tf.int32)
    num_examples = tf.shape(answer_spans)[0]
    first = tf.math.unsorted_segment_min(tf.where(covered, position, tf.int32.max), rows, num_examples)
    last = tf.math.unsorted_segment_max(tf.where(covered, position, -1), rows, num_examples)
    found = first <= last
    first, last = tf.where(found, first, -1), tf.where(found, last, -1)
    window_first, window_last = tf.gather(first, example), tf.gather(last, example)
    inside = tf.gather(found, example) & (window_first >= start) & (window_last < start + length)
    shift = tf.gather(offset, example) - start  # context token index -> packed position
    return {
        "start_positions": tf.where(inside, window_first + shift, 0),
        "end_positions": tf.where(inside, window_last + shift, 0),
        "answer_tokens": tf.stack([first, last], axis=1),
    }
