"""GLUE TSV reading (checked against the original BERT processors), datasets, bad input, metrics."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.glue import (
    GLUE_TASKS,
    ClassificationData,
    check_labels,
    classification_dataset,
    f1_binary,
    get_glue_task,
    glue_metrics,
    matthews_corrcoef,
    pearson,
    read_glue_tsv,
    spearman,
)

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "glue"


@pytest.fixture(scope="module")
def original(import_original_bert):
    return import_original_bert("run_classifier")


@pytest.mark.parametrize(
    "task, folder, split, file, processor",
    [
        ("mrpc", "MRPC", "train", "train.tsv", "MrpcProcessor"),
        ("mrpc", "MRPC", "dev", "dev.tsv", "MrpcProcessor"),
        ("mnli", "MNLI", "train", "train.tsv", "MnliProcessor"),
        ("mnli", "MNLI", "dev", "dev_matched.tsv", "MnliProcessor"),
        ("cola", "CoLA", "train", "train.tsv", "ColaProcessor"),
    ],
)
def test_matches_the_original_processors(original, task, folder, split, file, processor):
    data = read_glue_tsv(FIXTURES / folder / file, task, split)
    reference_processor = getattr(original, processor)()
    getter = reference_processor.get_train_examples if split == "train" else reference_processor.get_dev_examples
    reference = getter(str(FIXTURES / folder))
    labels = reference_processor.get_labels()
    assert data.text_a == [e.text_a for e in reference]
    assert data.text_b == ([e.text_b for e in reference] if reference[0].text_b is not None else None)
    assert data.labels.tolist() == [labels.index(e.label) for e in reference]
    assert list(GLUE_TASKS[task].labels) == labels


def test_test_split_has_no_labels_and_keeps_index(original):
    data = read_glue_tsv(FIXTURES / "MRPC" / "test.tsv", "mrpc", "test")
    reference = original.MrpcProcessor().get_test_examples(str(FIXTURES / "MRPC"))
    assert data.labels is None and data.ids == ["0", "1"]
    assert list(zip(data.text_a, data.text_b)) == [(e.text_a, e.text_b) for e in reference]


def test_regression_and_single_sentence_layouts():
    sts = read_glue_tsv(FIXTURES / "STS-B" / "train.tsv", "sts-b")
    assert sts.labels.dtype == np.float32 and sts.labels.tolist() == pytest.approx([5.0, 3.8, 0.5, 4.2])
    assert sts.text_b[1] == "A man is playing a flute."
    sst = read_glue_tsv(FIXTURES / "SST-2" / "train.tsv", "SST-2")
    assert sst.text_b is None and sst.labels.tolist() == [1, 0, 1, 0]
    assert get_glue_task("STS-B").num_classes == 1 and get_glue_task("mnli").num_classes == 3


def _write(tmp_path, text):
    path = tmp_path / "train.tsv"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def test_label_outside_the_classes_is_reported_with_file_and_line(tmp_path):
    path = _write(tmp_path, "sentence\tlabel\ngood\t1\nbad\t2\nfine\t0\n")
    with pytest.raises(ValueError, match=r"train\.tsv, line 3: label '2' is not one of \['0', '1'\]"):
        read_glue_tsv(path, "sst2")
    data = read_glue_tsv(path, "sst2", on_error="skip")
    assert data.text_a == ["good", "fine"] and data.labels.tolist() == [1, 0]


@pytest.mark.parametrize(
    "content, message",
    [
        ("sentence\tlabel\njust one column\n", r"line 2: expected at least 2 tab-separated columns, found 1"),
        (b"sentence\tlabel\nbad \xff byte\t1\n", r"line 2: not valid UTF-8"),
        ("sentence\tscore\nx\t1\n", r"line 1: header \['sentence', 'score'\] has no column 'label'"),
    ],
)
def test_malformed_lines(tmp_path, content, message):
    with pytest.raises(ValueError, match=message):
        read_glue_tsv(_write(tmp_path, content), "sst2")


def test_regression_label_must_be_a_number(tmp_path):
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    path = _write(tmp_path, header + "0\tg\tf\t2012\t1\tn\tn\ta\tb\tfive\n1\tg\tf\t2012\t2\tn\tn\tc\td\tnan\n")
    with pytest.raises(ValueError, match="line 2: label 'five' is not a number"):
        read_glue_tsv(path, "stsb")
    with pytest.raises(ValueError, match="no usable examples"):
        read_glue_tsv(path, "stsb", on_error="skip")


def test_missing_file_and_unknown_task(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.tsv"):
        read_glue_tsv(tmp_path / "nothing.tsv", "sst2")
    with pytest.raises(ValueError, match="Unknown GLUE task 'squad'"):
        get_glue_task("squad")


def test_check_labels():
    check_labels(np.array([0, 1, 2]), 3)
    with pytest.raises(ValueError, match=r"Example 1: label 3 is outside the class range \[0, 3\)"):
        check_labels(np.array([0, 3, -1]), 3)
    with pytest.raises(ValueError, match="Example 2: regression label"):
        check_labels(np.array([0.5, 1.0, np.inf]), 1)


def test_dataset_packs_pairs_in_the_graph(real_vocab_file):
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    preprocessor = BertPreprocessor(real_vocab_file, seq_length=32)
    data = read_glue_tsv(FIXTURES / "MRPC" / "train.tsv", "mrpc")
    ds = classification_dataset(data, preprocessor, batch_size=3, is_training=False, num_classes=2)
    batches = list(ds)
    assert [len(labels) for _, labels in batches] == [3, 3, 2]
    features, labels = batches[0]
    expected = preprocessor((tf.constant(data.text_a[:3]), tf.constant(data.text_b[:3])))
    for name in expected:
        np.testing.assert_array_equal(features[name], expected[name])
    np.testing.assert_array_equal(labels, data.labels[:3])
    bad = ClassificationData(["a", "b"], None, np.array([0, 5], "int32"), ["0", "1"])
    with pytest.raises(ValueError, match="label 5 is outside"):
        classification_dataset(bad, preprocessor, 2, is_training=True, num_classes=2)
    shuffled = classification_dataset(data, preprocessor, 8, is_training=True, seed=3)
    assert sorted(next(iter(shuffled))[1].numpy().tolist()) == sorted(data.labels.tolist())


# Metrics against values worked out by hand.
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
