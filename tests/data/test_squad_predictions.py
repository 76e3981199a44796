"""SQuAD span scoring and answer selection on hand-made logits: the span rules, max context, the
null answer of SQuAD 2.0, tie order, and bad arguments."""

import numpy as np
import pytest

from keras_bert_lite.data.squad import SquadExample, predict_answers, score_spans, squad_features

CONTEXT = "alpha beta gamma delta epsilon zeta eta theta"
OFFSET = 1 + 2 + 1  # [CLS] which ? [SEP]
LAYOUT = dict(max_seq_length=24, doc_stride=8, max_query_length=8)


@pytest.fixture(scope="module")
def tokenizer(real_vocab_file):
    from keras_bert_lite.text.tokenizer import BertTokenizer

    return BertTokenizer(real_vocab_file)


@pytest.fixture(scope="module")
def one_window(tokenizer):
    example = SquadExample("q", "which?", CONTEXT, ["gamma"], CONTEXT.index("gamma"))
    return [example], squad_features([example], tokenizer, **LAYOUT)


def _flat_logits(features, value=-5.0):
    return np.full(features.input_word_ids.shape, value, "float32"), np.full(features.input_word_ids.shape, value, "float32")


@pytest.mark.slow
def test_span_rules_start_before_end_and_max_answer_length(one_window):
    examples, features = one_window
    start, end = _flat_logits(features)
    start[0, OFFSET + 5], end[0, OFFSET + 1] = 10.0, 10.0  # the best pair, but it ends before it starts
    end[0, OFFSET + 7], end[0, OFFSET + 6] = 3.0, 1.0
    assert predict_answers(examples, features, start, end).answers["q"] == "zeta eta theta"  # 5..7, score 13
    assert predict_answers(examples, features, start, end, max_answer_length=2).answers["q"] == "zeta eta"  # 11
    start[0, 0], end[0, 0] = 20.0, 20.0  # [CLS] and the question are never part of an answer
    start[0, 1], end[0, 2] = 30.0, 30.0
    assert predict_answers(examples, features, start, end).answers["q"] == "zeta eta theta"


def test_null_answer_and_its_threshold(one_window):
    examples, features = one_window
    start, end = _flat_logits(features)
    start[0, OFFSET + 2], end[0, OFFSET + 2] = 4.0, 3.0  # "gamma", score 7
    start[0, 0], end[0, 0] = 5.0, 4.0  # null score 9
    v2 = predict_answers(examples, features, start, end, version_2_with_negative=True)
    assert v2.answers == {"q": ""} and v2.null_odds == {"q": pytest.approx(2.0)}
    assert v2.nbest["q"][0]["text"] == "" and v2.nbest["q"][1]["text"] == "gamma"
    assert sum(e["probability"] for e in v2.nbest["q"]) == pytest.approx(1.0)
    kept = predict_answers(examples, features, start, end, version_2_with_negative=True, null_score_diff_threshold=2.5)
    assert kept.answers == {"q": "gamma"}
    v1 = predict_answers(examples, features, start, end)
    assert v1.answers == {"q": "gamma"} and v1.null_odds == {} and "" not in [e["text"] for e in v1.nbest["q"]]


def test_a_start_counts_only_in_its_max_context_window(tokenizer):
    context = " ".join(f"word{n}" for n in range(12))  # "word", "##N": 2 tokens a word (## for 10, 11 too)
    example = SquadExample("q", "which?", context, ["word5"], context.index("word5"))
    features = squad_features([example], tokenizer, **LAYOUT)
    assert len(features) >= 2
    start, end = _flat_logits(features)
    in_both = [p for p in range(LAYOUT["max_seq_length"]) if features.token_starts[0, p] >= 0 and not features.max_context[0, p]
               and features.token_starts[0, p - 1] != features.token_starts[0, p]]
    position = in_both[0]  # a word the first window sees, but not with its most context
    start[0, position], end[0, position + 1] = 10.0, 10.0
    word = context.encode()[features.token_starts[0, position]:features.token_ends[0, position + 1]].decode()
    answers = predict_answers([example], features, start, end, n_best_size=3).answers
    assert answers["q"] != word
    first_piece = [np.argmax(row == features.token_starts[0, position]) for row in features.token_starts]
    window = next(w for w in range(1, len(features)) if features.max_context[w, first_piece[w]])
    start[window, first_piece[window]], end[window, first_piece[window] + 1] = 10.0, 10.0  # where it counts
    assert predict_answers([example], features, start, end, n_best_size=3).answers["q"] == word


def test_score_spans_ranks_ties_by_window_then_position_and_handles_empty_examples():
    # Two examples: the first with windows 0 and 1, the second without windows.
    starts = np.array([[0, 1, 2, 3], [0, 1, 2, 3]])  # byte offsets: positions 1-3 are context
    starts[:, 0] = -1
    logits = np.array([[9.0, 1.0, 0.0, 0.0], [9.0, 1.0, 0.0, 0.0]], "float32")
    spans = score_spans(logits, logits, starts, np.ones_like(starts, bool), [2, 0], n_best_size=4, max_answer_length=2)
    ranked = [(w, s, e) for w, s, e in zip(spans["window"][0].numpy(), spans["start"][0].numpy(), spans["end"][0].numpy())]
    # Scores: (1,1) 2; (1,2) 1; (2,2), (2,3), (3,3) 0 -- equal scores keep window, start rank, end rank order.
    assert ranked == [(0, 1, 1), (1, 1, 1), (0, 1, 2), (1, 1, 2), (0, 2, 2), (0, 2, 3), (0, 3, 3),
                      (1, 2, 2), (1, 2, 3), (1, 3, 3)]
    assert spans["score"][0].numpy().tolist()[:4] == [2.0, 2.0, 1.0, 1.0]
    assert spans["null_score"].numpy().tolist() == [18.0, float("inf")]
    assert spans["null_window"].numpy().tolist() == [0, -1] and spans["score"][1].shape[0] == 0


def test_predict_answers_checks_its_inputs(one_window):
    examples, features = one_window
    start, end = _flat_logits(features)
    with pytest.raises(ValueError, match=r"Logits of shape \(1, 23\)/\(1, 24\) do not match the features \(1, 24\)"):
        predict_answers(examples, features, start[:, :-1], end)
    with pytest.raises(ValueError, match="example_index must be non-decreasing and below 0"):
        predict_answers([], features, start, end)
