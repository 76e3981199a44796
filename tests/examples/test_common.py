"""examples/common.py in-process: resuming after an interruption trains on exactly the batches and
reaches exactly the weights of an uninterrupted run; --max_steps; the best model; TensorBoard
steps; the start-up environment."""

import importlib.util
import json
import os
import pathlib
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _import_common():
    spec = importlib.util.spec_from_file_location("common", ROOT / "examples" / "common.py")
    module = sys.modules["common"] = importlib.util.module_from_spec(spec)  # as the scripts import it
    spec.loader.exec_module(module)
    return module


common = _import_common()


class Interrupted(Exception):
    pass


@keras.saving.register_keras_serializable(package="tests")
class Recording(keras.Model):
    """A linear model that records the example ids of every batch it trains on."""

    def __init__(self, fail_at_batch=None, **kwargs):
        inputs = keras.Input((1,))
        super().__init__(inputs, keras.layers.Dense(1, kernel_initializer="ones")(inputs), **kwargs)
        self.batches, self.fail_at_batch = [], fail_at_batch

    def train_step(self, data):
        self.batches.append(data[0].numpy()[:, 0].astype(int).tolist())
        if len(self.batches) == self.fail_at_batch:
            raise Interrupted()  # as if killed during this step, after the last backup
        return super().train_step(data)

    def get_config(self):
        return {"name": self.name}


def _batches(seed=7):
    """10 examples in 4 batches per epoch, reshuffled on every pass with a fixed seed."""
    ids = np.arange(10, dtype="float32")[:, None]
    return tf.data.Dataset.from_tensor_slices((ids, 2 * ids)).shuffle(10, seed=seed, reshuffle_each_iteration=True).batch(3)


def _model(**kwargs):
    model = Recording(**kwargs)
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse", run_eagerly=True)
    return model


def _train(model, output_dir, plan, scores=None):
    scores = iter(scores or [0.5, 0.6, 0.7, 0.8])
    # The first dataset is given, as the scripts give theirs (`fine_tune`); later fits make new ones.
    return common.train_and_keep_best(model, _batches, lambda: {"score": next(scores)}, "score", str(output_dir),
                                      plan, save_checkpoints_steps=1, save_summary_steps=1, first_batches=_batches())


def _scalar_steps(log_dir, tag):
    """The steps of `tag`'s scalars over every event file, in the order they were written (file names
    do not sort by time: two runs in the same second differ only in a counter compared as text)."""
    events = []
    for path in pathlib.Path(log_dir).glob("events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            events += [(event.wall_time, event.step) for value in event.summary.value if value.tag == tag]
    return [step for _, step in sorted(events)]


@pytest.mark.slow
def test_a_resumed_run_trains_on_the_same_batches_to_the_same_weights(tmp_path):
    plan = common.TrainingPlan(steps_per_epoch=4, num_epochs=3)
    keras.utils.set_random_seed(0)
    whole = _model()
    _train(whole, tmp_path / "whole", plan)
    assert len(whole.batches) == 12 and int(whole.optimizer.iterations) == 12

    keras.utils.set_random_seed(0)
    first = _model(fail_at_batch=7)  # stopped in the middle of the second epoch
    with pytest.raises(Interrupted):
        _train(first, tmp_path / "resumed", plan)
    assert (tmp_path / "resumed" / "backup").is_dir()
    keras.utils.set_random_seed(0)  # as the same command does again (the shuffle depends on it too)
    second = _model()
    second.set_weights([w + 1.0 for w in second.get_weights()])  # the backup must replace these
    keep_best = _train(second, tmp_path / "resumed", plan, scores=[0.6, 0.7])
    assert first.batches[:6] + second.batches == whole.batches
    np.testing.assert_array_equal(second.get_weights()[0], whole.get_weights()[0])  # same steps, same Adam state
    assert [(e["epoch"], e["step"]) for e in keep_best.history] == [(1, 4), (2, 8), (3, 12)]
    assert not (tmp_path / "resumed" / "backup").exists()
    # TensorBoard steps are the optimizer's: the resumed run continues the curves.
    assert _scalar_steps(tmp_path / "resumed" / "logs" / "train", "loss") == list(range(1, 13))
    assert _scalar_steps(tmp_path / "resumed" / "logs" / "eval", "score") == [4, 8, 12]


def test_max_steps_ends_inside_an_epoch_and_still_evaluates(tmp_path):
    model = _model()
    keep_best = _train(model, tmp_path, common.TrainingPlan(steps_per_epoch=4, num_epochs=3, max_steps=6))
    assert int(model.optimizer.iterations) == 6 and len(model.batches) == 6
    assert [(e["epoch"], e["step"]) for e in keep_best.history] == [(1, 4), (2, 6)]


def test_the_best_epoch_is_kept_without_optimizer_state(tmp_path):
    model = _model()
    weights = []

    def evaluate():
        weights.append(model.get_weights())
        return {"score": [0.2, 0.9, 0.4][len(weights) - 1]}

    keep_best = common.train_and_keep_best(model, _batches, evaluate, "score", str(tmp_path),
                                           common.TrainingPlan(4, 3), 100, 100)
    assert keep_best.best == 0.9
    best = keras.saving.load_model(tmp_path / "best_model.keras")
    for saved, at_epoch_2 in zip(best.get_weights(), weights[1]):
        np.testing.assert_array_equal(saved, at_epoch_2)
    assert getattr(best, "optimizer", None) is None
    history = json.loads((tmp_path / "eval_history.json").read_text())
    assert [e["score"] for e in history] == [0.2, 0.9, 0.4]


def test_start_up_environment(monkeypatch):
    for name in ("TF_ENABLE_ONEDNN_OPTS", "TF_CPP_MIN_LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    common._set_tensorflow_environment()
    assert os.environ["TF_ENABLE_ONEDNN_OPTS"] == "1" and os.environ["TF_CPP_MIN_LOG_LEVEL"] == "1"
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    common._set_tensorflow_environment()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
