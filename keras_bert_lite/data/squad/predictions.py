"""Answers, n-best lists and SQuAD 2.0 null odds from the model's logits over `SquadFeatures`.

Candidates and their ranking come from `score_spans`, the scorer the exported SavedModel uses,
so evaluation and serving pick the same answer. The answer text is the original context from
the start of the span's first word to the end of its last word.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf
from tqdm import tqdm

from keras_bert_lite.data.squad.features import SquadFeatures
from keras_bert_lite.data.squad.reading import SquadExample
from keras_bert_lite.data.squad.spans import score_spans

# Traced once per process (and per n_best_size / max_answer_length), for any number of windows.
_score_spans = tf.function(score_spans, reduce_retracing=True)


@dataclasses.dataclass
class SquadPredictions:
    """Answers per question id.

    Attributes:
        answers: qas_id -> predicted answer text ("" = no answer, v2.0).
        nbest: qas_id -> list of {"text", "probability", "start_logit", "end_logit"}, best first.
        null_odds: qas_id -> null score minus best non-null score (v2.0; empty for v1.1).
    """

    answers: dict[str, str]
    nbest: dict[str, list[dict]]
    null_odds: dict[str, float]


def predict_answers(
    examples: list[SquadExample],
    features: SquadFeatures,
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    version_2_with_negative: bool = False,
    null_score_diff_threshold: float = 0.0,
    progress: bool = False,
    batch_size: int = 1024,
) -> SquadPredictions:
    """The paper's answer selection: the span (i, j), j >= i, maximising start_i + end_j.

    Candidates are ranked by `score_spans` (which states its rules). The n-best list keeps the
    best candidate of each distinct text, as the original `write_predictions` does.

    Args:
        examples, features: as given to the model.
        start_logits, end_logits: float [N, S], the model's outputs for `features`, in order.
        n_best_size: candidates kept per side and in the n-best list (20).
        max_answer_length: longest answer in tokens (30).
        version_2_with_negative: allow "no answer" (score of [CLS] at start and end).
        null_score_diff_threshold: predict "" when null score - best span score exceeds it.
        progress: show a progress bar.
        batch_size: examples scored per graph call (bounds memory, not results).

    Returns:
        `SquadPredictions`.
    """
    start_logits, end_logits = np.asarray(start_logits), np.asarray(end_logits)
    if start_logits.shape != features.input_word_ids.shape or end_logits.shape != start_logits.shape:
        raise ValueError(
            f"Logits of shape {start_logits.shape}/{end_logits.shape} do not match the features "
            f"{features.input_word_ids.shape}."
        )
    example_index = np.asarray(features.example_index)
    if np.any(np.diff(example_index) < 0) or (len(example_index) and example_index[-1] >= len(examples)):
        raise ValueError(
            f"features.example_index must be non-decreasing and below {len(examples)} (the number of "
            "examples): pass the features squad_features made from these examples."
        )
    windows_per_example = np.bincount(example_index, minlength=len(examples))
    window_starts = np.concatenate([[0], np.cumsum(windows_per_example)])
    predictions = SquadPredictions({}, {}, {})
    for first in tqdm(range(0, len(examples), batch_size), "Predicting", disable=not progress):
        last = min(first + batch_size, len(examples))
        rows = slice(window_starts[first], window_starts[last])
        spans = _score_spans(
            start_logits[rows], end_logits[rows], features.token_starts[rows], features.max_context[rows],
            windows_per_example[first:last], n_best_size, max_answer_length,
        )
        spans = {name: value.numpy() if isinstance(value, tf.Tensor) else value.to_list()
                 for name, value in spans.items()}
        for n, example in enumerate(examples[first:last]):
            example_spans = {name: values[n] for name, values in spans.items()}
            _add_prediction(predictions, example, features, example_spans, window_starts[first], n_best_size,
                            version_2_with_negative, null_score_diff_threshold)
    return predictions


def _add_prediction(predictions, example, features, spans, first_window, n_best_size, with_null, threshold):
    """One example's answer, n-best list and null odds, from its ranked candidates (the original's rules).

    `spans` holds the example's row of each `score_spans` output; candidates are read on demand
    (most are never looked at).
    """
    context = example.context.encode("utf-8")
    scores, start_logits, end_logits = spans["score"], spans["start_logit"], spans["end_logit"]

    def text_of(c):
        """The context text of the c-th best candidate."""
        window = first_window + spans["window"][c]
        start = features.token_starts[window, spans["start"][c]]
        return context[start : features.token_ends[window, spans["end"][c]]].decode("utf-8", "replace")

    null_score = spans["null_score"]
    null_entry = ("", spans["null_start_logit"], spans["null_end_logit"])
    with_null = with_null and np.isfinite(null_score)
    # The n-best list: the best candidate of each distinct text; for SQuAD 2.0 the null entry is ranked
    # among them (after spans of equal score), or appended if it ranks below the n-th.
    entries, seen = [], set()
    for c in range(len(scores)):
        if with_null and "" not in seen and null_score > scores[c] and len(entries) < n_best_size:
            entries.append(null_entry)
            seen.add("")
        if len(entries) >= n_best_size:
            break
        text = text_of(c)
        if text not in seen:
            seen.add(text)
            entries.append((text, start_logits[c], end_logits[c]))
    if with_null and "" not in seen:
        entries.append(null_entry)
    if not entries:
        entries.append(("", 0.0, 0.0))
    entry_scores = np.array([s + e for _, s, e in entries], "float64")
    probabilities = np.exp(entry_scores - entry_scores.max())
    probabilities /= probabilities.sum()
    predictions.nbest[example.qas_id] = [
        {"text": text, "probability": float(p), "start_logit": float(s), "end_logit": float(e)}
        for (text, s, e), p in zip(entries, probabilities)
    ]
    difference = null_score - start_logits[0] - end_logits[0] if len(scores) else float("inf")
    if with_null:
        predictions.null_odds[example.qas_id] = float(difference)
    answered = len(scores) and not (with_null and difference > threshold)
    predictions.answers[example.qas_id] = text_of(0) if answered else ""
