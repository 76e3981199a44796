"""Loading by TFDS name, on records served by `tfds.testing.mock_data` (no download here)."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_bert_lite.data.tfds_tasks import load_conll_from_tfds, load_glue_from_tfds, load_squad_from_tfds


def _serve(records):
    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_tensor_slices(records)

    return tfds.testing.mock_data(as_dataset_fn=as_dataset)


def test_glue_mnli_labels_are_remapped_by_name():
    # TFDS orders MNLI labels entailment, neutral, contradiction; the GLUE TSVs (and the original
    # BERT code) use contradiction, entailment, neutral.
    records = {"premise": ["A man sleeps.", "A dog barks.", "It rains."],
               "hypothesis": ["A man rests.", "A dog is silent.", "It is wet."],
               "label": np.array([0, 2, 1], "int64"), "idx": np.array([0, 1, 2], "int32")}
    with _serve(records):
        data = load_glue_from_tfds("mnli", "validation_matched")
    assert data.text_a[1] == "A dog barks." and data.text_b[1] == "A dog is silent."
    assert data.labels.tolist() == [1, 0, 2] and data.ids == ["0", "1", "2"]


def test_glue_test_split_is_unlabelled_and_stsb_is_regression():
    records = {"sentence": ["fine", "dull"], "label": np.array([-1, -1], "int64"), "idx": np.array([0, 1], "int32")}
    with _serve(records):
        data = load_glue_from_tfds("sst2", "test")
    assert data.labels is None and data.text_b is None
    records = {"sentence1": ["a", "b"], "sentence2": ["c", "d"], "label": np.array([4.5, 0.25], "float32"),
               "idx": np.array([0, 1], "int32")}
    with _serve(records):
        data = load_glue_from_tfds("stsb", "train")
    assert data.labels.dtype == np.float32 and data.labels.tolist() == [4.5, 0.25]


def test_squad_records_are_checked_like_the_json_reader():
    context = "The cat sat on the mat."
    records = {
        "id": ["q1", "q2"], "title": ["t", "t"], "context": [context, context], "question": ["Who?", "Where?"],
        "answers": {"text": tf.ragged.constant([["The cat"], ["the mat"]]),
                    "answer_start": tf.ragged.constant([[0], [3]], dtype=tf.int32)},
    }
    with _serve(records), pytest.raises(ValueError, match=r"tfds:squad/v1.1/train: question 'q2': answer 'the mat'"):
        load_squad_from_tfds("squad/v1.1", "train")
    with _serve(records):
        examples = load_squad_from_tfds("squad/v1.1", "train", on_error="skip")
    assert [(e.qas_id, e.answers, e.answer_start) for e in examples] == [("q1", ["The cat"], 0)]


def test_conll_tags_come_from_the_dataset_info():
    records = {"tokens": tf.ragged.constant([["EU", "rejects", "German", "call"], ["Peter"]]),
               "pos": tf.ragged.constant([[1, 2, 3, 4], [1]], dtype=tf.int64),
               "chunks": tf.ragged.constant([[1, 2, 3, 4], [1]], dtype=tf.int64),
               "ner": tf.ragged.constant([[3, 0, 7, 0], [1]], dtype=tf.int64)}
    with _serve(records):
        sentences, tags = load_conll_from_tfds(split="validation")
    assert tags[0] == "O" and len(tags) == 9
    assert sentences[0].tags == ["O" if i == 0 else tags[i] for i in (3, 0, 7, 0)]
    assert sentences[1].words == ["Peter"] and sentences[1].tags == [tags[1]]
