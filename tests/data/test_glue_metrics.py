"""GLUE metrics against values worked out by hand."""

import numpy as np
import pytest

from keras_bert_lite.data.glue.metrics import f1_binary, glue_metrics, matthews_corrcoef, pearson, spearman


def test_binary_metrics_by_hand():
    labels = [1, 1, 1, 0, 0, 0, 1, 0]
    predictions = [1, 1, 0, 0, 1, 0, 1, 0]
    # tp=3, fn=1, fp=1, tn=3: F1 = 6/8; MCC = (9-1)/sqrt(4*4*4*4) = 0.5
    assert f1_binary(labels, predictions) == pytest.approx(0.75)
    assert matthews_corrcoef(labels, predictions) == pytest.approx(0.5)
    assert matthews_corrcoef([1, 1, 0], [1, 1, 1]) == 0.0  # undefined -> 0
    assert f1_binary([0, 0], [0, 0]) == 0.0
    assert glue_metrics("mrpc", labels, predictions) == pytest.approx({"f1": 0.75, "accuracy": 0.75})
    assert set(glue_metrics("cola", labels, predictions)) == {"matthews_corrcoef", "accuracy"}


def test_correlations_by_hand():
    # x = 1,2,3,4 and y = 2,4,5,9: means 2.5 and 5; deviations (-1.5,-.5,.5,1.5), (-3,-1,0,4)
    # covariance sum 4.5+0.5+0+6 = 11; sqrt(5 * 26) = 11.40175...
    assert pearson([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / np.sqrt(130))
    # Ranks with ties: y = 10,20,20,30 -> 1, 2.5, 2.5, 4; x ranks 1..4: sum dev products
    # (-1.5)(-1.5)+(-.5)(0)+(.5)(0)+(1.5)(1.5) = 4.5; sqrt(5 * 4.5) -> 4.5/4.7434
    assert spearman([1, 2, 3, 4], [10, 20, 20, 30]) == pytest.approx(4.5 / np.sqrt(5 * 4.5))
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    result = glue_metrics("stsb", [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 5.0, 9.0])
    assert result["pearson"] == pytest.approx(11 / np.sqrt(130)) and result["spearman"] == pytest.approx(1.0)
