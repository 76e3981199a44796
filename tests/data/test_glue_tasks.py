"""GLUE task definitions: names, spellings, label counts."""

import pytest

from keras_bert_lite.data.glue.tasks import GLUE_TASKS, get_glue_task


def test_names_and_spellings():
    assert get_glue_task("STS-B") is GLUE_TASKS["stsb"] and get_glue_task("sst-2") is GLUE_TASKS["sst2"]
    assert get_glue_task("STS-B").num_classes == 1 and get_glue_task("mnli").num_classes == 3
    assert get_glue_task("mrpc").is_pair and not get_glue_task("cola").is_pair


def test_unknown_task():
    with pytest.raises(ValueError, match="Unknown GLUE task 'squad'"):
        get_glue_task("squad")
