"""tpu/pretrain.py's main job, shortened by flags: killed with SIGKILL mid-way, resumed, and learning."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.models import BertEncoder
from keras_bert_lite.training.optimization import WarmupLinearDecay

SCRIPT = pathlib.Path(__file__).parents[2] / "tpu" / "pretrain.py"
STEPS, WARMUP, LEARNING_RATE, SAVE_EVERY = 200, 20, 1e-3, 50
FLAGS = [
    "--max_documents=120", "--vocab_size=600", "--max_seq_length=64", "--max_predictions_per_seq=10",
    "--train_batch_size=32", f"--num_train_steps={STEPS}", f"--num_warmup_steps={WARMUP}",
    f"--learning_rate={LEARNING_RATE}", "--steps_per_loop=25", f"--save_checkpoints_steps={SAVE_EVERY}",
    "--num_examples_to_show=2",
]
KILL_AFTER = 2 * SAVE_EVERY
TIMEOUT = 400


def _scalars(event_file: pathlib.Path, tag: str) -> dict[int, float]:
    values = {}
    for event in tf.compat.v1.train.summary_iterator(str(event_file)):
        for value in event.summary.value:
            if value.tag == tag:
                values[event.step] = float(tf.make_ndarray(value.tensor))
    return values


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory):
    """Run 1 is SIGKILLed once checkpoint KILL_AFTER exists; run 2 (same command) finishes."""
    output = tmp_path_factory.mktemp("pretrain")
    command = [sys.executable, str(SCRIPT), f"--output_dir={output}", *FLAGS]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    with open(output.parent / "run1.log", "w") as log:
        first = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        marker = output / "checkpoints" / f"ckpt-{KILL_AFTER}.index"
        deadline = time.monotonic() + TIMEOUT
        while not marker.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert first.returncode == -signal.SIGKILL, (output.parent / "run1.log").read_text()[-3000:]
    after_kill = sorted(int(p.name[len("ckpt-"): -len(".index")]) for p in (output / "checkpoints").glob("ckpt-*.index"))
    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    return output, after_kill, second.stdout


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_final_step(killed_and_resumed):
    output, after_kill, _ = killed_and_resumed
    metrics = json.loads((output / "metrics.json").read_text())
    resumed_from = metrics["train"]["resumed_from"]
    assert resumed_from == after_kill[-1] >= KILL_AFTER
    assert metrics["train"]["step"] == STEPS
    # Every checkpoint on disk is complete and readable; no partial files are left behind.
    directory = output / "checkpoints"
    for index in directory.glob("ckpt-*.index"):
        assert tf.train.load_checkpoint(str(index)[: -len(".index")]).get_variable_to_shape_map()
    assert tf.train.latest_checkpoint(str(directory)).endswith(f"ckpt-{STEPS}")
    assert not [p for p in directory.rglob("*") if "_temp" in p.name or "partial" in p.name]
    # The loss curve continues: run 2 starts after the checkpoint, at the schedule's learning rate there.
    first_events, second_events = sorted((output / "summaries" / "train").glob("events.out.tfevents.*"),
                                         key=lambda p: p.stat().st_mtime)
    loss_1, loss_2 = _scalars(first_events, "loss"), _scalars(second_events, "loss")
    assert min(loss_1) == 1 and max(loss_1) >= resumed_from
    assert min(loss_2) == resumed_from + 1 and max(loss_2) == STEPS
    rate = _scalars(second_events, "learning_rate")[resumed_from + 1]
    expected = float(WarmupLinearDecay(LEARNING_RATE, STEPS, WARMUP)(resumed_from))
    assert rate == pytest.approx(expected, rel=1e-5)
    start = np.mean([loss_1[s] for s in range(1, 11)])
    before = np.mean([loss_1[s] for s in range(resumed_from - 9, resumed_from + 1)])
    after = np.mean([loss_2[s] for s in range(resumed_from + 1, resumed_from + 11)])
    assert abs(after - before) < 0.5 * (start - before)


@pytest.mark.slow
def test_main_job_learns_and_writes_everything(killed_and_resumed):
    output, _, stdout = killed_and_resumed
    metrics = json.loads((output / "metrics.json").read_text())
    heldout, baseline = metrics["heldout"]["mlm_accuracy"], metrics["baseline"]["mlm_accuracy"]
    assert heldout > 1.5 * baseline and heldout > baseline + 0.02, (heldout, baseline)
    assert "most-frequent-token baseline" in stdout and "top-5" in stdout
    assert len(metrics["masked_examples"]) == 2
    assert all(len(example["predictions"]) == 5 for example in metrics["masked_examples"])
    vocab = (output / "vocab.txt").read_text().split("\n")
    config = json.loads((output / "bert_config.json").read_text())
    assert config["vocab_size"] == len([t for t in vocab if t]) and config["hidden_size"] == 128
    encoder = keras.saving.load_model(output / "encoder.keras")
    assert isinstance(encoder, BertEncoder) and encoder.config.vocab_size == config["vocab_size"]
    for name in ("pretrainer.keras", "data/manifest.json", "data/heldout.tfrecord"):
        assert (output / name).exists(), name


def test_bad_input_is_one_clear_error(tmp_path):
    run = subprocess.run(
        [sys.executable, str(SCRIPT), f"--input_files={tmp_path}/missing-*.tfrecord",
         f"--vocab_file={tmp_path}/vocab.txt", f"--output_dir={tmp_path}/out"],
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if line.startswith("pretrain.py: error:")]
    assert errors == [f"pretrain.py: error: Input pattern '{tmp_path}/missing-*.tfrecord' matches no file."]
    assert "Traceback" not in run.stderr
