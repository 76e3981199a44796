"""The models' losses: BERT's pre-training statistics, one definition behind `fit` and
`PretrainingLoop`, and SQuAD's span loss."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite import BertConfig, BertEncoder, BertPretrainer
from keras_bert_lite.models.losses import (
    STATISTIC_NAMES,
    pretraining_losses,
    pretraining_statistics,
    span_loss,
)
from keras_bert_lite.training.pretraining_loop import PretrainingLoop

CONFIG = BertConfig.preset(
    "tiny", vocab_size=100, hidden_size=32, num_attention_heads=2, intermediate_size=64, num_hidden_layers=1,
    max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
)
BATCH, SEQ, PREDICTIONS = 8, 16, 4


def _batch():
    rng = np.random.default_rng(7)
    features = {
        "input_word_ids": rng.integers(5, CONFIG.vocab_size, (BATCH, SEQ)).astype("int32"),
        "input_mask": np.ones((BATCH, SEQ), "int32"),
        "input_type_ids": np.zeros((BATCH, SEQ), "int32"),
        "masked_lm_positions": rng.integers(1, SEQ, (BATCH, PREDICTIONS)).astype("int32"),
    }
    labels = {
        "masked_lm_ids": rng.integers(5, CONFIG.vocab_size, (BATCH, PREDICTIONS)).astype("int32"),
        "masked_lm_weights": (rng.random((BATCH, PREDICTIONS)) < 0.7).astype("float32"),
        "next_sentence_labels": rng.integers(0, 2, (BATCH, 1)).astype("int32"),
    }
    return features, labels


@pytest.fixture(scope="module")
def pretrainer():
    keras.utils.set_random_seed(0)
    return BertPretrainer(BertEncoder(CONFIG))


@pytest.mark.slow
def test_fit_path_and_pretraining_loop_agree_on_one_batch(pretrainer):
    """`evaluate` (compute_loss + Keras metrics) and `PretrainingLoop.evaluate` report the same
    losses and accuracies on one batch."""
    features, labels = _batch()
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-3))
    keras_result = pretrainer.evaluate(features, labels, batch_size=BATCH, verbose=0, return_dict=True)
    strategy = tf.distribute.get_strategy()
    loop = PretrainingLoop(strategy, pretrainer, keras.optimizers.Adam(1e-3), global_batch_size=BATCH)
    dataset = loop.distribute(lambda context: tf.data.Dataset.from_tensors((features, labels)))
    loop_result = loop.evaluate(iter(dataset), 1)
    # Tolerance: float32 rounding of two separately traced graphs of the same model.
    np.testing.assert_allclose(
        [loop_result[name] for name in STATISTIC_NAMES], [keras_result[name] for name in STATISTIC_NAMES], rtol=1e-5
    )


def test_shares_of_a_split_batch_sum_to_the_whole_batch():
    """Normalised by the whole batch's totals, the parts' statistics add up to the whole's."""
    rng = np.random.default_rng(1)
    _, labels = _batch()
    outputs = {"mlm_logits": rng.normal(size=(BATCH, PREDICTIONS, CONFIG.vocab_size)).astype("float32") * 3,
               "nsp_logits": rng.normal(size=(BATCH, 2)).astype("float32")}
    whole = pretraining_statistics(labels, outputs)
    totals = tf.constant(labels["masked_lm_weights"].sum()), tf.constant(float(BATCH))
    parts = [
        pretraining_statistics(*tf.nest.map_structure(lambda t, a=a, b=b: t[a:b], (labels, outputs)), *totals)
        for a, b in ((0, 3), (3, BATCH))
    ]
    for name in STATISTIC_NAMES:
        # Tolerance: float32 sums taken in a different order.
        np.testing.assert_allclose(float(parts[0][name] + parts[1][name]), float(whole[name]), rtol=1e-6)
    assert [float(x) for x in pretraining_losses(labels, outputs)] == [float(whole[n]) for n in STATISTIC_NAMES[:3]]


def test_a_batch_without_masked_predictions_has_zero_mlm_loss_not_nan():
    _, labels = _batch()
    labels["masked_lm_weights"][:] = 0.0
    outputs = {"mlm_logits": np.ones((BATCH, PREDICTIONS, CONFIG.vocab_size), "float32"),
               "nsp_logits": np.zeros((BATCH, 2), "float32")}
    statistics = pretraining_statistics(labels, outputs)
    assert float(statistics["mlm_loss"]) == 0.0 and float(statistics["mlm_accuracy"]) == 0.0
    np.testing.assert_allclose(float(statistics["nsp_loss"]), np.log(2.0), rtol=1e-6)


def test_span_loss_is_the_mean_of_start_and_end_cross_entropy():
    rng = np.random.default_rng(1)
    start, end = rng.normal(size=(3, 7)).astype("float32"), rng.normal(size=(3, 7)).astype("float32")
    labels = {"start_positions": np.array([0, 3, 6]), "end_positions": np.array([[1], [4], [6]])}
    reference = [
        tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=np.ravel(y), logits=logits))
        for y, logits in ((labels["start_positions"], start), (labels["end_positions"], end))
    ]
    loss = span_loss(labels, {"start_logits": start, "end_logits": end})
    np.testing.assert_allclose(loss, (reference[0] + reference[1]) / 2, rtol=1e-6)
