"""Entity-level precision, recall and F1 with the rules of CoNLL's conlleval script.

Example:

    >>> entity_f1([["B-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]])["f1"]
    1.0
"""

from __future__ import annotations

import collections
from collections.abc import Sequence


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
