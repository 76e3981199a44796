"""The paper's answer-span scoring, in TensorFlow ops: one scorer for evaluation and serving.

For each window, the `n_best_size` highest start and end logits are paired (the original BERT
`write_predictions`); a pair (i, j) is a candidate when both are context tokens, i has its
maximal context in that window, j >= i and j - i < `max_answer_length`. Its score is
start_logit[i] + end_logit[j] in float64, as the original sums Python floats, so candidates rank
in exactly its order (ties: earlier window, then higher-ranked start, then higher-ranked end).
The "no answer" score of SQuAD 2.0 is start_logit[0] + end_logit[0] ([CLS]), lowest over an
example's windows.
"""

from __future__ import annotations

import tensorflow as tf


def score_spans(
    start_logits: tf.Tensor,
    end_logits: tf.Tensor,
    token_starts: tf.Tensor,
    max_context: tf.Tensor,
    windows_per_example: tf.Tensor,
    n_best_size: int = 20,
    max_answer_length: int = 30,
) -> dict[str, tf.Tensor]:
    """Every candidate span of every example, best first, and each example's null score.

    Args:
        start_logits, end_logits: float [W, S], the model's outputs for W windows, each example's
            windows consecutive and examples in order.
        token_starts: int [W, S], >= 0 at context tokens (their byte offsets), < 0 elsewhere.
        max_context: bool [W, S], whether the window gives the token its maximal context.
        windows_per_example: int [B], summing to W.
        n_best_size: start and end positions considered per window (20).
        max_answer_length: longest answer in tokens (30).

    Returns:
        `score`, `start_logit`, `end_logit`: float64 ragged [B, (candidates)], best first;
        `window` (index into W), `start`, `end` (positions in the window): int32 ragged, the same
        layout; `null_score`, `null_start_logit`, `null_end_logit`: float64 [B], from the window
        with the lowest [CLS] score (+inf for an example without windows); `null_window`: int32 [B].
    """
    start_logits = tf.cast(start_logits, tf.float64)
    end_logits = tf.cast(end_logits, tf.float64)
    windows_per_example = tf.cast(windows_per_example, tf.int32)
    num_examples = tf.size(windows_per_example)
    example_of_window = tf.repeat(tf.range(num_examples), windows_per_example)
    is_context = token_starts >= 0

    k = tf.minimum(n_best_size, tf.shape(start_logits)[1])
    top_start_logit, top_start = tf.math.top_k(start_logits, k)  # ties: lower position first
    top_end_logit, top_end = tf.math.top_k(end_logits, k)
    can_start = tf.gather(is_context & max_context, top_start, batch_dims=1)
    can_end = tf.gather(is_context, top_end, batch_dims=1)
    i, j = top_start[:, :, None], top_end[:, None, :]
    valid = can_start[:, :, None] & can_end[:, None, :] & (j >= i) & (j - i < max_answer_length)

    def candidates(values):
        return tf.boolean_mask(tf.broadcast_to(values, tf.shape(valid)), valid)  # window, start, end order

    window = candidates(tf.range(tf.shape(start_logits)[0])[:, None, None])
    start_logit, end_logit = candidates(top_start_logit[:, :, None]), candidates(top_end_logit[:, None, :])
    score = start_logit + end_logit
    example = tf.gather(example_of_window, window)
    order = tf.argsort(score, direction="DESCENDING", stable=True)
    order = tf.gather(order, tf.argsort(tf.gather(example, order), stable=True))
    ranked = {
        "score": score, "start_logit": start_logit, "end_logit": end_logit, "window": window,
        "start": candidates(i), "end": candidates(j),
    }
    row_ids = tf.gather(example, order)
    spans = {
        name: tf.RaggedTensor.from_value_rowids(tf.gather(values, order), row_ids, nrows=num_examples)
        for name, values in ranked.items()
    }

    null = start_logits[:, 0] + end_logits[:, 0]
    null_score = tf.math.unsorted_segment_min(null, example_of_window, num_examples)
    is_lowest = tf.equal(null, tf.gather(null_score, example_of_window))
    window_index = tf.range(tf.shape(null)[0])
    null_window = tf.math.unsorted_segment_min(
        tf.where(is_lowest, window_index, tf.int32.max), example_of_window, num_examples
    )
    has_window = windows_per_example > 0
    null_window = tf.where(has_window, null_window, -1)
    pick = tf.where(has_window, null_window, tf.shape(null)[0])  # past the end: a 0.0 appended below

    def null_logit(logits):
        return tf.gather(tf.concat([logits[:, 0], tf.zeros([1], tf.float64)], axis=0), pick)

    spans.update(
        null_score=tf.where(has_window, null_score, float("inf")),
        null_window=null_window,
        null_start_logit=null_logit(start_logits),
        null_end_logit=null_logit(end_logits),
    )
    return spans
