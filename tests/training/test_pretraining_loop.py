"""The distributed pre-training loop in one process: loss, accumulation, NaN guard, checkpoints."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.interop import save_google_checkpoint
from keras_bert_lite.models import BertEncoder, BertPretrainer, pretraining_losses
from keras_bert_lite.models.checkpoint_folder import find_checkpoint
from keras_bert_lite.optimization import WarmupLinearDecay, create_optimizer
from keras_bert_lite.training.pretraining_driver import (
    CHECKPOINT_SUBDIR,
    EVAL_SUMMARY_SUBDIR,
    run_pretraining,
)
from keras_bert_lite.training.pretraining_loop import PretrainingLoop, global_batch_shares
from keras_bert_lite.training.run_checkpoints import (
    NonFiniteLossError,
    TrainingCheckpoints,
    export_pretrained,
    restore_model_weights,
)


def test_global_batch_shares_add_up_to_the_batch_loss(jobs):
    """Shares of uneven micro-batches sum to BERT's loss and Keras' accuracies on the whole batch."""
    rng = np.random.default_rng(3)
    _, labels = jobs.synthetic_examples(24, seed=3)
    outputs = {"mlm_logits": rng.normal(size=(24, jobs.PREDICTIONS, jobs.VOCAB)).astype(np.float32) * 3,
               "nsp_logits": rng.normal(size=(24, 2)).astype(np.float32)}
    weight_total = tf.constant(labels["masked_lm_weights"].sum())
    shares = sum(
        global_batch_shares(*(tf.nest.map_structure(lambda t, a=a, b=b: t[a:b], (labels, outputs))),
                            weight_total, tf.constant(24.0))
        for a, b in ((0, 5), (5, 6), (6, 24))
    ).numpy()
    total, mlm, nsp = (float(x) for x in pretraining_losses(labels, outputs))
    np.testing.assert_allclose(shares[:3], [total, mlm, nsp], rtol=1e-5)
    mlm_accuracy = keras.metrics.SparseCategoricalAccuracy()
    mlm_accuracy.update_state(labels["masked_lm_ids"], outputs["mlm_logits"], labels["masked_lm_weights"])
    nsp_accuracy = keras.metrics.SparseCategoricalAccuracy()
    nsp_accuracy.update_state(labels["next_sentence_labels"].ravel(), outputs["nsp_logits"])
    np.testing.assert_allclose(shares[3:], [float(mlm_accuracy.result()), float(nsp_accuracy.result())], rtol=1e-5)


@pytest.fixture(scope="module")
def large_batch_run(jobs):
    """The seeded tiny model of jobs.build trained 3 steps on batches of 32 of 96 synthetic examples,
    the reference of the accumulation and mixed-precision tests: (examples, the loop, its weights
    before training, its history)."""
    examples = jobs.synthetic_examples(96)
    loop = jobs.build(tf.distribute.get_strategy(), 32)
    initial = loop.model.get_weights()
    history = loop.train(iter(loop.distribute(jobs.dataset_fn(examples, 32))), 3)
    return examples, loop, initial, history


@pytest.mark.slow
def test_gradient_accumulation_equals_one_large_batch(jobs, large_batch_run):
    """4 micro-batches of 8 and one batch of 32 give the same updates (dropout off, clipping on)."""
    examples, big_loop, initial, big = large_batch_run
    loop = jobs.build(tf.distribute.get_strategy(), 32, gradient_accumulation_steps=4)
    assert (big_loop.micro_batch_size, loop.micro_batch_size) == (32, 8)
    accumulated = loop.train(iter(loop.distribute(jobs.dataset_fn(examples, 32))), 3)
    assert big["gradient_norm"].min() > 1.0  # the clip is active
    np.testing.assert_allclose(accumulated["loss"], big["loss"], rtol=1e-5)
    np.testing.assert_allclose(accumulated["gradient_norm"], big["gradient_norm"], rtol=1e-4)
    big_weights = big_loop.model.get_weights()
    moved = max(np.abs(a - b).max() for a, b in zip(big_weights, initial))
    assert moved > 1e-3
    for a, b in zip(big_weights, loop.model.get_weights()):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-5)


def test_bad_batch_sizes_are_rejected(jobs):
    with pytest.raises(ValueError, match="multiple of num_replicas"):
        jobs.build(tf.distribute.get_strategy(), 30, gradient_accumulation_steps=4)
    with pytest.raises(ValueError, match="gradient_accumulation_steps"):
        jobs.build(tf.distribute.get_strategy(), 32, gradient_accumulation_steps=0)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(jobs, tmp_path):
    features, labels = jobs.synthetic_examples(8 * 6)
    labels["masked_lm_weights"][16:24] = np.nan  # the third batch of 8: step 3
    loop = jobs.build(tf.distribute.get_strategy(), 8)
    with pytest.raises(NonFiniteLossError, match="loss is nan at step 3") as error:
        run_pretraining(loop, jobs.dataset_fn((features, labels), 8), num_train_steps=6, model_dir=str(tmp_path),
                        steps_per_loop=1, save_checkpoints_steps=2, progress=False)
    assert error.value.step == 3
    assert error.value.last_checkpoint.endswith("ckpt-2") and "ckpt-2" in str(error.value)
    directory = tmp_path / CHECKPOINT_SUBDIR
    assert tf.train.latest_checkpoint(str(directory)).endswith("ckpt-2")
    assert not list(directory.glob("ckpt-3*"))
    fresh = jobs.build(tf.distribute.get_strategy(), 8)
    checkpoints = TrainingCheckpoints(str(directory), fresh.strategy, fresh.model, fresh.optimizer, fresh.global_step)
    assert checkpoints.restore() == 2
    assert all(np.isfinite(w).all() for w in fresh.model.get_weights())


def test_restore_skips_damaged_checkpoints(jobs, tmp_path):
    loop = jobs.build(tf.distribute.get_strategy(), 8)
    directory = str(tmp_path / "ckpt")
    checkpoints = TrainingCheckpoints(directory, loop.strategy, loop.model, loop.optimizer, loop.global_step)
    saved = {}
    for step in (1, 2, 3):
        loop.global_step.assign(step)
        loop.model.encoder.embeddings.word_embeddings.assign_add(tf.ones_like(loop.model.encoder.embeddings.word_embeddings))
        checkpoints.save()
        saved[step] = loop.model.encoder.embeddings.word_embeddings.numpy().copy()
    # The newest checkpoint's data is truncated and the state file is garbage.
    data = tmp_path / "ckpt" / "ckpt-3.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    (tmp_path / "ckpt" / "checkpoint").write_text("garbage {{{")
    fresh = jobs.build(tf.distribute.get_strategy(), 8)
    restored = TrainingCheckpoints(directory, fresh.strategy, fresh.model, fresh.optimizer, fresh.global_step)
    assert restored.restore() == 2
    np.testing.assert_array_equal(fresh.model.encoder.embeddings.word_embeddings.numpy(), saved[2])
    # A checkpoint of another model is an error, not a silent partial restore.
    other = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="does not match"):
        TrainingCheckpoints(directory, fresh.strategy, other, fresh.optimizer, fresh.global_step).restore()


def test_export_writes_float32_models_for_fine_tuning(jobs, tmp_path):
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        loop = jobs.build(tf.distribute.get_strategy(), 8)
    finally:
        keras.config.set_dtype_policy("float32")
    vocab = tmp_path / "vocab.src"
    vocab.write_text("[PAD]\n[UNK]\n")
    # A cased vocabulary without upper-case tokens: only tokenizer_config.json tells its casing.
    paths = export_pretrained(loop.model, str(tmp_path / "export"), str(vocab), do_lower_case=False)
    features, _ = jobs.synthetic_examples(4)
    encoder = keras.saving.load_model(paths["encoder"])
    pretrainer = keras.saving.load_model(paths["pretrainer"])
    assert isinstance(encoder, BertEncoder) and encoder.dtype_policy.name == "float32"
    # The export holds the bf16 model's float32 master weights, bit for bit, and computes what a
    # float32 model of those weights computes (same float32 ops: rounding-level differences only).
    master = loop.model.get_weights()
    assert all(w.dtype == np.float32 for w in master)
    for exported, weight in zip(pretrainer.get_weights(), master, strict=True):
        np.testing.assert_array_equal(exported, weight)
    reference = BertPretrainer(BertEncoder(loop.model.encoder.config, dtype="float32"))
    reference.set_weights(master)
    inputs = {k: v for k, v in features.items() if k != "masked_lm_positions"}
    np.testing.assert_allclose(encoder(inputs)["sequence_output"].numpy(),
                               reference.encoder(inputs)["sequence_output"].numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pretrainer(features)["mlm_logits"].numpy(),
                               reference(features)["mlm_logits"].numpy(), rtol=1e-6, atol=1e-6)
    assert json.loads((tmp_path / "export" / "bert_config.json").read_text()) == jobs.tiny_config().to_dict()
    assert (tmp_path / "export" / "vocab.txt").read_text() == "[PAD]\n[UNK]\n"
    assert json.loads(Path(paths["tokenizer_config"]).read_text()) == {"do_lower_case": False}
    folder = find_checkpoint(str(tmp_path / "export"))
    assert (folder.kind, folder.lower_case) == ("keras", False), folder.lower_case_source
    assert not [p for p in (tmp_path / "export").iterdir() if "partial" in p.name]


@pytest.mark.slow
def test_mixed_float16_trains_with_loss_scaling(jobs, large_batch_run):
    """mixed_float16 (the GPU setting) through a LossScaleOptimizer: close to the float32 run."""
    examples, _, _, expected = large_batch_run
    strategy = tf.distribute.get_strategy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        keras.utils.set_random_seed(1)  # as jobs.build seeds the float32 run
        pretrainer = BertPretrainer(BertEncoder(jobs.tiny_config()))
        optimizer = keras.optimizers.LossScaleOptimizer(create_optimizer(1e-2, num_train_steps=20, num_warmup_steps=2))
        loop = PretrainingLoop(strategy, pretrainer, optimizer, 32)
        history = loop.train(iter(loop.distribute(jobs.dataset_fn(examples, 32))), 3)
    finally:
        keras.config.set_dtype_policy("float32")
    assert loop.loss_scaling and pretrainer.encoder.embeddings.compute_dtype == "float16"
    assert all(v.dtype == "float32" for v in pretrainer.trainable_variables)
    np.testing.assert_allclose(history["loss"], expected["loss"], rtol=1e-2)
    np.testing.assert_allclose(history["gradient_norm"], expected["gradient_norm"], rtol=5e-2)
    assert int(optimizer.iterations) == 3  # no step was skipped


@pytest.mark.slow
def test_init_checkpoint_formats(jobs, tmp_path):
    """restore_model_weights reads a .keras file, our training checkpoint and a Google checkpoint."""
    loop = jobs.build(tf.distribute.get_strategy(), 8, seed=7)
    source, expected = loop.model, loop.model.get_weights()
    source.save(tmp_path / "model.keras")
    loop.global_step.assign(5)
    TrainingCheckpoints(str(tmp_path / "ckpt"), loop.strategy, source, loop.optimizer, loop.global_step).save()
    save_google_checkpoint(source, tmp_path / "google" / "bert_model.ckpt")
    for path, kind in ((tmp_path / "model.keras", "keras"), (tmp_path / "ckpt" / "ckpt-5", "training checkpoint"),
                       (tmp_path / "google" / "bert_model.ckpt", "google")):
        target = jobs.build(tf.distribute.get_strategy(), 8, seed=8).model
        assert restore_model_weights(target, str(path)) == kind
        for a, b in zip(target.get_weights(), expected):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(FileNotFoundError):
        restore_model_weights(target, str(tmp_path / "missing.keras"))


def test_periodic_evaluation_and_the_last_learning_rate(jobs, tmp_path):
    loop = jobs.build(tf.distribute.get_strategy(), 8, num_train_steps=6)
    evaluated = []

    def evaluate_fn(step):
        evaluated.append(int(loop.global_step.numpy()))
        return {"mlm_accuracy": step / 10, "examples": 8.0}

    result = run_pretraining(loop, jobs.dataset_fn(jobs.synthetic_examples(48), 8), num_train_steps=6,
                             model_dir=str(tmp_path), steps_per_loop=3, save_checkpoints_steps=6, progress=False,
                             evaluate_fn=evaluate_fn, eval_every_steps=4)
    # Loops are cut to land on the evaluation steps; the last step is always evaluated.
    assert evaluated == [4, 6] and [e["step"] for e in result["evaluations"]] == [4, 6]
    assert 0 < result["evaluations"][0]["train_seconds"] < result["evaluations"][1]["train_seconds"]
    assert result["evaluations"][1]["mlm_accuracy"] == 0.6
    (events,) = (tmp_path / EVAL_SUMMARY_SUBDIR).glob("events.out.tfevents.*")
    scalars = {(v.tag, e.step): float(tf.make_ndarray(v.tensor))
               for e in tf.compat.v1.train.summary_iterator(str(events)) for v in e.summary.value}
    assert scalars == {("mlm_accuracy", 4): pytest.approx(0.4), ("mlm_accuracy", 6): pytest.approx(0.6),
                       ("examples", 4): 8.0, ("examples", 6): 8.0}
    # Step 6 runs at the schedule's value for iteration 5 (not the mean over the last loop's steps 5-6).
    assert result["learning_rate"] == pytest.approx(float(WarmupLinearDecay(1e-2, 6, 2)(5)), rel=1e-6)
    with pytest.raises(ValueError, match="eval_every_steps must be >= 0"):
        run_pretraining(loop, jobs.dataset_fn(jobs.synthetic_examples(48), 8), 6, str(tmp_path), eval_every_steps=-1)


@pytest.mark.slow
def test_a_resume_with_a_changed_schedule_is_logged(jobs, tmp_path, caplog):
    examples = jobs.synthetic_examples(48)
    for num_train_steps, warned in ((3, False), (3, False), (5, True)):  # a run, its rerun, a longer run
        loop = jobs.build(tf.distribute.get_strategy(), 8, num_train_steps=num_train_steps)
        caplog.clear()
        with caplog.at_level("WARNING"):
            run_pretraining(loop, jobs.dataset_fn(examples, 8), num_train_steps=num_train_steps,
                            model_dir=str(tmp_path), steps_per_loop=3, save_checkpoints_steps=3, progress=False)
        assert ("Resuming at step 3 with a changed schedule (num_train_steps 3 -> 5; learning_rate" in caplog.text
                and "from step 4 on, the learning rate follows the new schedule" in caplog.text) is warned, caplog.text
    assert json.loads((tmp_path / "schedule.json").read_text())["num_train_steps"] == 5


@pytest.mark.slow
def test_new_data_steps_switch_to_longer_sequences_and_resume_in_either_phase(jobs, tmp_path):
    """BERT's two lengths: 8-token examples, then 16-token ones from step 2; a run resumed at step 4
    asks for the second phase's data from that step."""
    features, labels = jobs.synthetic_examples(8 * 6)
    calls = []

    def dataset_fn(context, start_step):
        length = jobs.SEQ if start_step >= 2 else jobs.SEQ // 2  # masked positions are < SEQ // 2
        calls.append((start_step, length))
        short = {name: value[:, :length] if name != "masked_lm_positions" else value
                 for name, value in features.items()}
        return jobs.dataset_fn((short, labels), 8)(context, start_step)

    loop = jobs.build(tf.distribute.get_strategy(), 8, num_train_steps=6)
    result = run_pretraining(loop, dataset_fn, num_train_steps=6, model_dir=str(tmp_path), steps_per_loop=5,
                             save_checkpoints_steps=2, progress=False, new_data_steps=[2])
    assert result["step"] == 6 and calls == [(0, 8), (2, 16)]
    for path in (tmp_path / CHECKPOINT_SUBDIR).glob("ckpt-6*"):  # as if killed before the last checkpoint
        path.unlink()
    calls.clear()
    fresh = jobs.build(tf.distribute.get_strategy(), 8, num_train_steps=6)
    result = run_pretraining(fresh, dataset_fn, num_train_steps=6, model_dir=str(tmp_path), steps_per_loop=5,
                             save_checkpoints_steps=2, progress=False, new_data_steps=[2])
    assert result["resumed_from"] == 4 and result["step"] == 6 and calls == [(4, 16)]
    with pytest.raises(ValueError, match=r"new_data_steps must be in \(0, num_train_steps=6\)"):
        run_pretraining(fresh, dataset_fn, num_train_steps=6, model_dir=str(tmp_path), new_data_steps=[6])
