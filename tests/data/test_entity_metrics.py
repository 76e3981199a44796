"""Entity spans and entity-level F1 against hand-computed values."""

import pytest

from keras_bert_lite.data.ner.metrics import entity_f1, entity_spans


def test_entity_spans_iob2_and_iob1():
    assert entity_spans(["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-ORG"]) == [
        ("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 5), ("ORG", 5, 6)]
    # IOB1 (CoNLL-2003's original files): I- starts an entity, B- only splits adjacent ones.
    assert entity_spans(["I-ORG", "I-ORG", "O", "I-PER", "B-PER", "I-LOC"]) == [
        ("ORG", 0, 2), ("PER", 3, 4), ("PER", 4, 5), ("LOC", 5, 6)]
    assert entity_spans(["O", "O"]) == []


def test_entity_f1_counts_partial_matches_as_wrong():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "I-ORG", "O", "B-MISC"]]
    predicted = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "I-ORG", "O", "O", "B-MISC"]]
    # gold entities: PER(0,2) LOC(3,4) ORG(0,3) MISC(4,5) = 4
    # predicted: PER(0,2) ok, ORG(3,4) wrong type, ORG(0,2) partial -> wrong, MISC(4,5) ok = 4, 2 correct
    result = entity_f1(gold, predicted)
    assert (result["num_gold"], result["num_predicted"], result["num_correct"]) == (4, 4, 2)
    assert result["precision"] == result["recall"] == result["f1"] == pytest.approx(0.5)
    assert result["per_type"]["ORG"] == pytest.approx({"precision": 0.0, "recall": 0.0, "f1": 0.0, "num_gold": 1})
    assert result["per_type"]["PER"]["f1"] == 1.0
    # one more predicted entity that is wrong: p = 2/5, r = 2/4 -> f1 = 2*.4*.5/.9
    predicted[0][2] = "B-LOC"
    assert entity_f1(gold, predicted)["f1"] == pytest.approx(2 * 0.4 * 0.5 / 0.9)


def test_entity_f1_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="Sentence 0: 2 gold tags but 1 predicted"):
        entity_f1([["O", "O"]], [["O"]])
