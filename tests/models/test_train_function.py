"""The first `fit` traces the train step once: the optimizer's variables are made before it."""

import functools

import keras
import numpy as np
import pytest

import keras_bert_lite as kbl

VOCAB_SIZE, SEQ_LENGTH, BATCH = 60, 12, 4


def _features(rng, n):
    return {
        "input_word_ids": rng.integers(5, VOCAB_SIZE, (n, SEQ_LENGTH)).astype("int32"),
        "input_mask": np.ones((n, SEQ_LENGTH), "int32"),
        "input_type_ids": np.zeros((n, SEQ_LENGTH), "int32"),
    }


def _classifier():
    keras.utils.set_random_seed(0)
    return kbl.BertClassifier(kbl.BertEncoder(kbl.BertConfig.preset("tiny", vocab_size=VOCAB_SIZE)), num_classes=2)


def _counting_traces(model) -> list:
    """A list that gains an item each time `model`'s train step is traced."""
    traced = []
    train_step = model.train_step

    def counted_train_step(data):
        traced.append(1)
        return train_step(data)

    model.train_step = counted_train_step
    return traced


def _fitted(model, keras_own_train_function: bool):
    """`model` after two epochs of two batches, counting how often its train step was traced."""
    rng = np.random.default_rng(0)
    x, y = _features(rng, 2 * BATCH), rng.integers(0, 2, 2 * BATCH)
    model.compile(optimizer=keras.optimizers.AdamW(1e-3), loss="sparse_categorical_crossentropy")
    if keras_own_train_function:  # the reference: Keras' path, which builds the optimizer inside the trace
        model.make_train_function = functools.partial(keras.Model.make_train_function, model)
    traced = _counting_traces(model)
    model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    return model, len(traced)


@pytest.mark.slow
def test_first_fit_traces_once_and_trains_as_keras_does():
    ours, ours_traces = _fitted(_classifier(), keras_own_train_function=False)
    reference, reference_traces = _fitted(_classifier(), keras_own_train_function=True)
    assert (ours_traces, reference_traces) == (1, 2)
    assert len(ours.optimizer.variables) == len(reference.optimizer.variables)
    for got, expected in zip(ours.weights + ours.optimizer.variables, reference.weights + reference.optimizer.variables):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=0, atol=1e-6, err_msg=got.path)


@pytest.mark.slow
def test_pretrainer_first_fit_traces_once():
    keras.utils.set_random_seed(0)
    pretrainer = kbl.BertPretrainer(kbl.BertEncoder(kbl.BertConfig.preset("tiny", vocab_size=VOCAB_SIZE)))
    rng = np.random.default_rng(0)
    features = {**_features(rng, BATCH), "masked_lm_positions": np.tile(np.arange(1, 4, dtype="int32"), (BATCH, 1))}
    labels = {
        "masked_lm_ids": rng.integers(5, VOCAB_SIZE, (BATCH, 3)).astype("int32"),
        "masked_lm_weights": np.ones((BATCH, 3), "float32"),
        "next_sentence_labels": rng.integers(0, 2, (BATCH, 1)).astype("int32"),
    }
    pretrainer.compile(optimizer=keras.optimizers.AdamW(1e-3))
    traced = _counting_traces(pretrainer)
    pretrainer.fit(features, labels, batch_size=BATCH, epochs=1, verbose=0)
    assert len(traced) == 1
