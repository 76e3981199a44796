"""The official SQuAD evaluation: answer normalisation, exact match and token F1, maximised over
references."""

from __future__ import annotations

import collections
import re
import string

import numpy as np

from keras_bert_lite.data.squad.reading import SquadExample

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION_CHARS = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION_CHARS)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> int:
    """1 if the normalised texts are equal, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(reference))


def f1_score(prediction: str, reference: str) -> float:
    """Token-overlap F1 of the normalised texts (both empty: 1; one empty: 0): the harmonic mean of
    precision and recall, 2 overlap / (predicted tokens + reference tokens)."""
    predicted = normalize_answer(prediction).split()
    gold = normalize_answer(reference).split()
    if not predicted or not gold:
        return float(predicted == gold)
    overlap = sum((collections.Counter(predicted) & collections.Counter(gold)).values())
    return 2 * overlap / (len(predicted) + len(gold))


def squad_evaluate(examples: list[SquadExample], predictions: dict[str, str]) -> dict[str, float]:
    """The official SQuAD EM and F1 (percentages), maximised over the reference answers.

    Unanswerable questions (v2.0), and questions whose references all normalise to nothing,
    have the single reference "". A question without a prediction scores 0.

    Returns:
        {"exact_match", "f1", "total"}, plus "HasAns_exact_match", "HasAns_f1",
        "HasAns_total", "NoAns_exact_match", "NoAns_f1", "NoAns_total" when the data has
        unanswerable questions.
    """
    if not examples:
        raise ValueError("squad_evaluate needs at least one example.")
    exact, f1, has_answer = [], [], []
    for example in examples:
        references = [a for a in example.answers if normalize_answer(a)] or [""]
        prediction = predictions.get(example.qas_id)
        has_answer.append(references != [""])
        exact.append(0.0 if prediction is None else max(exact_match(prediction, r) for r in references))
        f1.append(0.0 if prediction is None else max(f1_score(prediction, r) for r in references))
    exact, f1, has_answer = np.array(exact, "float64"), np.array(f1, "float64"), np.array(has_answer)
    result = {"exact_match": 100.0 * float(exact.mean()), "f1": 100.0 * float(f1.mean()), "total": len(examples)}
    if any(e.is_impossible for e in examples):
        for prefix, subset in (("HasAns", has_answer), ("NoAns", ~has_answer)):
            result[f"{prefix}_total"] = int(subset.sum())
            if subset.any():
                result[f"{prefix}_exact_match"] = 100.0 * float(exact[subset].mean())
                result[f"{prefix}_f1"] = 100.0 * float(f1[subset].mean())
    return result
