"""Held-out evaluation of the main job: baselines, top-5 accuracy, masked-word predictions, report."""

import re

import keras
import main_job_data  # tpu/, on sys.path through conftest.py
import main_job_report
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.data.pretraining.format import pretraining_feature_spec
from keras_bert_lite.models import BertEncoder, BertPretrainer
from keras_bert_lite.optimization import create_optimizer
from keras_bert_lite.text.tokenizer import load_vocabulary
from keras_bert_lite.training.pretraining_loop import PretrainingLoop

SEQ, PREDICTIONS, BATCH = 32, 5, 16


@pytest.fixture(scope="module")
def data(demo_data):
    settings, data = demo_data  # conftest.py's, shared with test_main_job_data.py
    assert (settings.max_seq_length, settings.max_predictions_per_seq, settings.num_shown) == (SEQ, PREDICTIONS, 3)
    return data


@pytest.fixture(scope="module")
def loop(data):
    keras.utils.set_random_seed(3)
    config = BertConfig.preset("tiny", vocab_size=len(load_vocabulary(data.vocab_file)), hidden_size=32,
                               num_attention_heads=2, intermediate_size=64, num_hidden_layers=1,
                               max_position_embeddings=SEQ)
    pretrainer = BertPretrainer(BertEncoder(config))
    optimizer = create_optimizer(1e-3, num_train_steps=10, num_warmup_steps=1)
    return PretrainingLoop(tf.distribute.get_strategy(), pretrainer, optimizer, BATCH)


def _read(files, num_examples=None):
    """The first `num_examples` records of `files` in order, parsed with the format's spec (one
    `tf.io.parse_example`, not the reader's checked pipeline): (features, labels) as the model takes them."""
    records = list(tf.data.TFRecordDataset(tf.io.gfile.glob(files)).take(num_examples or -1).as_numpy_iterator())
    parsed = {name: value.numpy() for name, value in
              tf.io.parse_example(records, pretraining_feature_spec(SEQ, PREDICTIONS)).items()}
    features = {ours: parsed[original].astype(np.int32) for ours, original in (
        ("input_word_ids", "input_ids"), ("input_mask", "input_mask"), ("input_type_ids", "segment_ids"),
        ("masked_lm_positions", "masked_lm_positions"))}
    labels = {"masked_lm_ids": parsed["masked_lm_ids"].astype(np.int32),
              "masked_lm_weights": parsed["masked_lm_weights"],
              "next_sentence_labels": parsed["next_sentence_labels"].astype(np.int32)}
    return features, labels


@pytest.mark.slow
def test_baselines_count_labels_of_the_evaluated_examples(data):
    reference = main_job_report.baselines(data.train_files, data.heldout_files, SEQ, PREDICTIONS, num_examples=32)
    _, train = _read(data.train_files)
    _, heldout = _read(data.heldout_files, 32)
    train_ids = train["masked_lm_ids"][train["masked_lm_weights"] > 0]
    heldout_ids = heldout["masked_lm_ids"][heldout["masked_lm_weights"] > 0]
    counts = np.bincount(train_ids)
    top5 = sorted(range(len(counts)), key=lambda i: (-counts[i], i))[:5]
    assert reference["most_frequent_token_ids"] == top5
    assert reference["mlm_accuracy"] == pytest.approx(np.mean(heldout_ids == top5[0]))
    assert reference["mlm_top5_accuracy"] == pytest.approx(np.mean(np.isin(heldout_ids, top5)))
    majority = np.bincount(train["next_sentence_labels"].ravel()).argmax()
    assert reference["nsp_accuracy"] == pytest.approx(np.mean(heldout["next_sentence_labels"] == majority))
    assert (reference["examples"], reference["masked_tokens"]) == (32, len(heldout_ids))


@pytest.mark.slow
def test_heldout_top5_accuracy_matches_the_model_outputs(data, loop):
    metrics = main_job_report.evaluate_heldout(loop, data.heldout_files, SEQ, PREDICTIONS)
    examples = metrics["examples"]
    features, labels = _read(data.heldout_files, examples)
    assert examples == len(labels["masked_lm_ids"]) - len(labels["masked_lm_ids"]) % BATCH > 0
    logits = np.concatenate([loop.model({k: v[i: i + BATCH] for k, v in features.items()})["mlm_logits"].numpy()
                             for i in range(0, examples, BATCH)])
    weights = labels["masked_lm_weights"]
    ranks = (logits > np.take_along_axis(logits, labels["masked_lm_ids"][..., None], -1)).sum(-1)
    per_batch = [(weights[i: i + BATCH] * (ranks[i: i + BATCH] < k)).sum() / weights[i: i + BATCH].sum()
                 for k in (1, 5) for i in range(0, examples, BATCH)]
    batches = examples // BATCH
    np.testing.assert_allclose(metrics["mlm_accuracy"], np.mean(per_batch[:batches]), rtol=1e-5)
    np.testing.assert_allclose(metrics["mlm_top5_accuracy"], np.mean(per_batch[batches:]), rtol=1e-5)
    assert metrics["mlm_top5_accuracy"] > metrics["mlm_accuracy"]
    with pytest.raises(ValueError, match="fewer than one batch"):
        big = PretrainingLoop(loop.strategy, loop.model, loop.optimizer, 4096)
        main_job_report.evaluate_heldout(big, data.heldout_files, SEQ, PREDICTIONS)


def test_predictions_for_the_shown_words(data, loop):
    shown = main_job_report.predict_masked_words(loop.model, data.vocab_file, data.shown_sentences, SEQ)
    assert len(shown) == len(data.shown_sentences) == 3
    vocabulary = load_vocabulary(data.vocab_file)
    for example, (sentence, index) in zip(shown, data.shown_sentences):
        assert example["text"].split()[index].startswith("[MASK]")
        assert example["answer"] == sentence.split()[index].rstrip(".,;:").lower()
        tokens = [token for token, _ in example["predictions"]]
        probabilities = [p for _, p in example["predictions"]]
        assert len(tokens) == 5 and set(tokens) <= set(vocabulary)
        assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) <= 1 + 1e-6
    report = main_job_report.format_report(
        dict(mlm_accuracy=0.3, mlm_top5_accuracy=0.5, nsp_accuracy=0.8, mlm_loss=3.0, nsp_loss=0.4),
        dict(mlm_accuracy=0.06, mlm_top5_accuracy=0.2, nsp_accuracy=0.5, examples=32, masked_tokens=150),
        shown, main_job_data.SHOWN_RULE)
    assert re.search(r"MLM accuracy \(top-5\) +0\.5000 +0\.2000", report) and main_job_data.SHOWN_RULE in report
    assert report.count("answer: ") == 3
    curve = [dict(step=1000, train_seconds=30.0, mlm_accuracy=0.1), dict(step=2000, train_seconds=60.0, mlm_accuracy=0.3)]
    with_curve = main_job_report.format_report(
        dict(mlm_accuracy=0.3, mlm_top5_accuracy=0.5, nsp_accuracy=0.8, mlm_loss=3.0, nsp_loss=0.4),
        dict(mlm_accuracy=0.06, mlm_top5_accuracy=0.2, nsp_accuracy=0.5, examples=32, masked_tokens=150),
        shown, main_job_data.SHOWN_RULE, curve)
    assert with_curve.startswith("Held-out MLM accuracy during training: 0.100 at step 1000 (0.5 min), "
                                 "0.300 at step 2000 (1.0 min).\n") and with_curve.endswith(report)
