"""The official SQuAD EM / F1, checked against values computed by hand."""

import pytest

from keras_bert_lite.data.squad import SquadExample, exact_match, f1_score, normalize_answer, squad_evaluate


def test_normalization_removes_case_punctuation_articles_and_extra_spaces():
    assert normalize_answer("The  Black-Forest!") == "blackforest"
    assert normalize_answer("an apple, a pear and THE plum.") == "apple pear and plum"
    assert normalize_answer("theory of anthems") == "theory of anthems"  # only whole words
    assert exact_match("the Black Forest.", "Black  forest") == 1
    assert exact_match("in 1895", "1895") == 0


def test_f1_by_hand():
    # prediction tokens: black forest mountains; reference: black forest -> p=2/3, r=1, f1=0.8
    assert f1_score("the Black Forest mountains", "Black Forest") == pytest.approx(0.8)
    # repeated tokens count once per match: common = {paris: 1, france: 1} -> p = 2/3, r = 1
    assert f1_score("paris paris france", "paris france") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert f1_score("", "") == 1.0 and f1_score("x", "") == 0.0 and f1_score("", "x") == 0.0
    assert f1_score("red", "blue") == 0.0


def test_evaluate_takes_the_best_reference_and_scores_missing_as_zero():
    examples = [
        SquadExample("1", "q", "c", ["in 1895", "1895"], 0),
        SquadExample("2", "q", "c", ["Émile Dubois", "Dubois"], 0),
        SquadExample("3", "q", "c", ["the Black Forest"], 0),
    ]
    predictions = {"1": "1895", "2": "owner Émile Dubois"}
    # q1: exact via second reference. q2: best F1 vs "Émile Dubois" = 2*(2/3*1)/(2/3+1) = 0.8.
    result = squad_evaluate(examples, predictions)
    assert result == pytest.approx({"exact_match": 100 / 3, "f1": 100 * (1 + 0.8 + 0) / 3, "total": 3})


def test_evaluate_v2_splits_has_and_no_answer():
    examples = [
        SquadExample("a", "q", "c", ["Warsaw"], 0),
        SquadExample("b", "q", "c", [], -1, is_impossible=True),
        SquadExample("c", "q", "c", [], -1, is_impossible=True),
    ]
    result = squad_evaluate(examples, {"a": "Warsaw", "b": "", "c": "Paris"})
    assert result["exact_match"] == pytest.approx(200 / 3)
    assert result["HasAns_exact_match"] == 100.0 and result["HasAns_total"] == 1
    assert result["NoAns_exact_match"] == 50.0 and result["NoAns_total"] == 2
