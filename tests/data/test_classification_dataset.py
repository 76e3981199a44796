"""Classification datasets: label checks, pairs packed in the graph, shuffling."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.glue.dataset import check_labels, classification_dataset
from keras_bert_lite.data.glue.reader import ClassificationData, read_glue_tsv

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "glue"


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
