"""tpu/main_job.py, the main job, shortened by flags (with dynamic masking and two sequence lengths),
killed with SIGKILL in its long-sequence phase, resumed and learning, then rerun, skipping the transfer
suite its corpus is too small for; tpu/pretrain.py on your TFRecords; flag checks of both; bad input as
one error line. One main-job folder is shared by the tests that read one; flag and bad-input runs call
the scripts in this process."""

import importlib.util
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import keras
import main_job_data  # tpu/, on sys.path through conftest.py
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite import tf_startup
from keras_bert_lite.config import BertConfig
from keras_bert_lite.data.corpora import builtin_documents
from keras_bert_lite.data.pretraining.writer import create_pretraining_data
from keras_bert_lite.models import BertEncoder
from keras_bert_lite.optimization import WarmupLinearDecay

PRETRAIN = pathlib.Path(__file__).parents[2] / "tpu" / "pretrain.py"
MAIN_JOB = PRETRAIN.with_name("main_job.py")
# The main job runs in fresh processes (killed and resumed): one worker builds it, for every test here.
pytestmark = pytest.mark.subprocess
STEPS, WARMUP, LEARNING_RATE, SAVE_EVERY, LONG_STEPS = 200, 20, 1e-3, 50, 150
FLAGS = [
    "--corpus_packages=", "--max_documents=120", "--vocab_size=600", "--max_seq_length=32", "--max_predictions_per_seq=5",
    "--long_seq_length=64", f"--long_steps={LONG_STEPS}",  # steps 51-200 at 64 tokens (10 predictions)
    "--train_batch_size=32", f"--num_train_steps={STEPS}", f"--num_warmup_steps={WARMUP}",
    f"--learning_rate={LEARNING_RATE}", "--steps_per_loop=25", f"--save_checkpoints_steps={SAVE_EVERY}",
    "--num_examples_to_show=2", "--dynamic_masking",
]
KILL_AFTER = 2 * SAVE_EVERY  # in the long phase
SKIPPED = "Transfer suite skipped: too few documents kept out of pre-training (task python_or_package: "
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
    command = [sys.executable, str(MAIN_JOB), f"--output_dir={output}", *FLAGS]
    # As a user's shell would have it: without the device types the test process may have set.
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLED_DEVICE_TYPES"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
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
    return output, after_kill, second.stdout, second.stderr, (output.parent / "run1.log").read_text()


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_final_step(killed_and_resumed):
    output, after_kill, _, _, first_log = killed_and_resumed
    metrics = json.loads((output / "metrics.json").read_text())
    resumed_from = metrics["train"]["resumed_from"]
    assert resumed_from == after_kill[-1] >= KILL_AFTER
    assert metrics["train"]["step"] == STEPS
    # Run 1 went from the 32-token data to the 64-token data (10 predictions) after step 50, was
    # killed in that phase, and run 2 resumed in it.
    assert f"step {STEPS - LONG_STEPS}: new data." in first_log
    assert "precision float32, XLA True" in first_log  # the main job's default on CPUs too
    long_data = json.loads((output / "data_long" / "manifest.json").read_text())["settings"]
    assert (long_data["max_seq_length"], long_data["max_predictions_per_seq"]) == (64, 10)
    assert long_data["vocab_file"] == str(output / "vocab.txt")
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
    output, _, stdout, stderr, _ = killed_and_resumed
    if tf_startup.cuda_driver_missing():
        assert "cuInit" not in stderr, stderr[-2000:]  # no GPU probe on a machine without a driver
    metrics = json.loads((output / "metrics.json").read_text())
    heldout, baseline = metrics["heldout"], metrics["baseline"]
    # 200 short steps: well above the baselines, far from the full main job's accuracy.
    assert heldout["mlm_accuracy"] > 1.5 * baseline["mlm_accuracy"] and heldout["mlm_accuracy"] > baseline[
        "mlm_accuracy"] + 0.02, (heldout, baseline)
    assert heldout["mlm_top5_accuracy"] > baseline["mlm_top5_accuracy"] + 0.02, (heldout, baseline)
    assert "(the most frequent training token)" in stdout and "MLM accuracy (top-5)" in stdout
    assert main_job_data.SHOWN_RULE in stdout
    assert len(metrics["masked_examples"]) == 2
    # Held-out scalars are in TensorBoard at the last step; metrics.json has the last step's learning rate.
    evaluated = {}
    for events in (output / "summaries" / "eval").glob("events.out.tfevents.*"):  # one per run
        evaluated.update(_scalars(events, "mlm_top5_accuracy"))
    assert evaluated == {STEPS: pytest.approx(heldout["mlm_top5_accuracy"])}
    assert metrics["train"]["learning_rate"] == pytest.approx(
        float(WarmupLinearDecay(LEARNING_RATE, STEPS, WARMUP)(STEPS - 1)), rel=1e-5)
    assert all(len(example["predictions"]) == 5 for example in metrics["masked_examples"])
    vocab = (output / "vocab.txt").read_text().split("\n")
    config = json.loads((output / "bert_config.json").read_text())
    assert config["vocab_size"] == len([t for t in vocab if t]) and config["hidden_size"] == 128
    assert config["hidden_dropout_prob"] == config["attention_probs_dropout_prob"] == 0.0
    encoder = keras.saving.load_model(output / "encoder.keras")
    assert isinstance(encoder, BertEncoder) and encoder.config.to_dict() == config
    assert json.loads((output / "tokenizer_config.json").read_text()) == {"do_lower_case": True}
    for name in ("pretrainer.keras", "data/manifest.json", "data/heldout.tfrecord"):
        assert (output / name).exists(), name


def _scripts():
    """tests/examples/scripts.py (in-process script runs), one module for the whole session."""
    name = "script_test_helpers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, PRETRAIN.parents[1] / "tests" / "examples" / "scripts.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


@pytest.mark.slow
def test_a_rerun_reports_the_same_results_and_exits_0(killed_and_resumed, capfd):
    """Killed after the last checkpoint (before its evaluation), the same command evaluates the
    final step and prints the same report; rerun once finished, it prints it again from metrics.json."""
    output, _, stdout, _, _ = killed_and_resumed
    metrics = json.loads((output / "metrics.json").read_text())
    evaluations = json.loads((output / "evaluations.json").read_text())
    assert [e["step"] for e in evaluations] == [STEPS] and evaluations == metrics["evaluations"]
    report = stdout[stdout.index("Held-out documents:"):].strip()
    # As if killed after the last checkpoint, before the final evaluation was recorded; an earlier
    # evaluation (step SAVE_EVERY) is kept from evaluations.json and joins the curve.
    (output / "metrics.json").unlink()
    earlier = dict(evaluations[0], step=SAVE_EVERY, train_seconds=6.0)
    (output / "evaluations.json").write_text(json.dumps([earlier]))
    code, out, err = _scripts().run_script(MAIN_JOB, capfd, f"--output_dir={output}", *FLAGS)
    assert code == 0, err[-3000:]
    again = json.loads((output / "metrics.json").read_text())
    assert [e["step"] for e in again["evaluations"]] == [SAVE_EVERY, STEPS]
    for name in ("mlm_accuracy", "mlm_top5_accuracy", "nsp_accuracy", "mlm_loss"):
        assert again["heldout"][name] == pytest.approx(metrics["heldout"][name], rel=1e-4), name
    assert again["baseline"] == metrics["baseline"] and again["train"]["resumed_from"] == STEPS
    assert [[t for t, _ in e["predictions"]] for e in again["masked_examples"]] == [
        [t for t, _ in e["predictions"]] for e in metrics["masked_examples"]]
    assert f"Held-out MLM accuracy during training: {earlier['mlm_accuracy']:.3f} at step {SAVE_EVERY} (0.1 min)" in out
    assert out[out.index("Held-out documents:"):].strip() == report
    # Finished: the same command prints the report again and changes nothing, also when the run was
    # written before some flags existed (left at their defaults).
    older = json.loads((output / "metrics.json").read_text())
    for name in ("weight_decay_rate", "do_whole_word_mask"):
        del older["flags"][name]
    (output / "metrics.json").write_text(json.dumps(older))
    stamps = {p: p.stat().st_mtime_ns for p in output.rglob("*")}
    code, out, err = _scripts().run_script(MAIN_JOB, capfd, f"--output_dir={output}", *FLAGS)
    assert code == 0 and "finished run of 200 steps" in out, err[-3000:]
    assert out[out.index("Held-out documents:"):].strip() == report
    assert {p: p.stat().st_mtime_ns for p in output.rglob("*")} == stamps


@pytest.fixture(scope="module")
def user_data(tmp_path_factory, real_vocab_file):
    """TFRecords of 30 stdlib documents at --max_seq_length=32, with the real 30,522-token vocab."""
    directory = tmp_path_factory.mktemp("user_data")
    create_pretraining_data(builtin_documents()[:30], real_vocab_file, [str(directory / "train.tfrecord")],
                            max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1, seed=3)
    return directory


def test_bad_input_is_one_line_naming_the_flag_and_writes_nothing(tmp_path, user_data, real_vocab_file, capfd):
    """Missing, unreadable (a folder given as a file: chmod does not stop root) and malformed files
    behind each file flag; every run stops before --output_dir is created."""
    out = tmp_path / "out"
    data, vocab = f"--input_files={user_data}/train.tfrecord", f"--vocab_file={real_vocab_file}"
    lengths = ["--max_seq_length=32", "--max_predictions_per_seq=5", f"--output_dir={out}"]
    (tmp_path / "text.tfrecord").write_text("not a TFRecord\n" * 20)
    (tmp_path / "vocab_latin1.txt").write_bytes(b"[PAD]\n[UNK]\ncaf\xe9\n")
    (tmp_path / "config.json").write_text('{"vocab_size": 30522, "hidden_size": ')
    (tmp_path / "text.keras").write_text("not a zip")
    (tmp_path / "weights.bin").write_bytes(b"\x00" * 64)
    small_vocab = tmp_path / "small_vocab.txt"
    small_vocab.write_text("".join(pathlib.Path(real_vocab_file).read_text().splitlines(keepends=True)[:1000]))
    cases = {
        (f"--input_files={tmp_path}/missing-*.tfrecord", vocab):
            f"^--input_files: Input pattern '{tmp_path}/missing-\\*\\.tfrecord' matches no file\\.$",
        (f"--input_files={tmp_path}", vocab): f"^--input_files: {tmp_path}.*(folder|directory)",
        (f"--input_files={tmp_path}/text.tfrecord", vocab): f"--input_files.*{tmp_path}/text.tfrecord",
        (data, vocab, "--max_seq_length=64"):
            f"{user_data}/train.tfrecord, record 1: feature input_ids has 32 values, expected 64.*--max_seq_length=64",
        (data, f"--vocab_file={small_vocab}"): f"{user_data}/train.tfrecord, record 1: feature input_ids has value.*1000",
        (data, f"--vocab_file={tmp_path}/none.txt"): f"^--vocab_file: .*{tmp_path}/none.txt",
        (data, f"--vocab_file={tmp_path}"): f"^--vocab_file: .*{tmp_path}.*(folder|directory)",
        (data, f"--vocab_file={tmp_path}/vocab_latin1.txt"): "^--vocab_file: .*vocab_latin1.txt.*(UTF-8|utf-8)",
        (data, vocab, f"--bert_config_file={tmp_path}/none.json"): f"^--bert_config_file: .*{tmp_path}/none.json",
        (data, vocab, f"--bert_config_file={tmp_path}"): f"^--bert_config_file: .*{tmp_path}.*(folder|directory)",
        (data, vocab, f"--bert_config_file={tmp_path}/config.json"): "^--bert_config_file: .*config.json",
        (data, vocab, f"--init_checkpoint={tmp_path}/none.keras"): f"^--init_checkpoint: .*{tmp_path}/none.keras",
        (data, vocab, f"--init_checkpoint={tmp_path}"): f"^--init_checkpoint: No TF checkpoint in directory {tmp_path}",
        (data, vocab, f"--init_checkpoint={tmp_path}/text.keras"):
            f"^--init_checkpoint: {tmp_path}/text.keras is not a .keras file \\(Keras writes a zip archive\\)\\.$",
        (data, vocab, f"--init_checkpoint={tmp_path}/weights.bin"):
            f"^--init_checkpoint: {tmp_path}/weights.bin is neither a .keras file nor a TensorFlow checkpoint",
    }
    # The main job: its data is not built when an input is bad.
    main_job_cases = {
        (f"--vocab_file={tmp_path}/none.txt",): f"^--vocab_file: .*{tmp_path}/none.txt",
        (f"--init_checkpoint={tmp_path}/text.keras",): "^--init_checkpoint: .*text.keras is not a .keras file",
        (f"--bert_config_file={tmp_path}/config.json",): "^--bert_config_file: .*config.json",
    }
    for script, script_cases in ((PRETRAIN, cases), (MAIN_JOB, main_job_cases)):
        for argv, expected in script_cases.items():
            error = _scripts().one_error(script, capfd, *lengths, *argv)  # the later of two values wins
            assert re.search(expected, error), (argv, error)
            assert not out.exists(), argv


@pytest.mark.slow
def test_corrupted_data_mid_file_is_one_clear_error(tmp_path, user_data, real_vocab_file, capfd):
    data = (user_data / "train.tfrecord").read_bytes()
    (tmp_path / "cut.tfrecord").write_bytes(data[: len(data) * 2 // 3])  # the first records stay intact
    error = _scripts().one_error(
        PRETRAIN, capfd, f"--input_files={tmp_path}/cut.tfrecord", f"--vocab_file={real_vocab_file}",
        "--max_seq_length=32", "--max_predictions_per_seq=5", "--train_batch_size=4", "--num_train_steps=2",
        "--steps_per_loop=1", f"--output_dir={tmp_path}/out")
    assert error.startswith(f"--input_files: {tmp_path}/cut.tfrecord, record "), error
    assert "truncated or corrupted" in error, error


def test_flags_are_checked_against_each_other_before_anything_is_built(tmp_path, capfd):
    """pretrain.py's flags, on your data and in the main job, which adds its own."""
    cases = {
        "--num_train_steps=20": None,  # the warmup is a proportion of the steps by default
        "--num_train_steps=20 --num_warmup_steps=60": "--num_warmup_steps=60 must be in [0, --num_train_steps=20]",
        "--num_warmup_steps=5 --warmup_proportion=0.2": "--num_warmup_steps and --warmup_proportion both set",
        "--warmup_proportion=1.5": "--warmup_proportion=1.5 must be in [0, 1]",
        "--train_batch_size=30 --gradient_accumulation_steps=4": "must be a multiple of --gradient_accumulation_steps",
        "--max_predictions_per_seq=80": "--max_predictions_per_seq=80 must be at most --max_seq_length=32",
        "--max_seq_length=4": "--max_seq_length=4 must be at least 5",
        "--vocab_file= --input_files=x.tfrecord": "--input_files and --vocab_file are required",
        "--input_files= --vocab_file=v.txt": "--input_files and --vocab_file are required: your pre-training "
                                             "TFRecords and the vocabulary they were written with (the built-in "
                                             "main job, without them: python tpu/main_job.py).",
        "--dupe_factor=3": "Unknown command line flag 'dupe_factor'",
        "--bert_config_file=c.json --model=mini": "--bert_config_file and --model both set",
        "--bert_config_file=c.json --dropout_rate=0.1": "--dropout_rate applies to --model",
        "--dropout_rate=1": "--dropout_rate=1.0 must be in [0, 1)",
        "--tpu=local": "--tpu only applies to --strategy=tpu",
        "--num_gpus=1": "--num_gpus only applies to --strategy=mirrored or one_device",
        "--num_train_steps=0": "--num_train_steps must be positive",
        "--weight_decay_rate=-0.1": "--weight_decay_rate must be >= 0",
        "--long_seq_length=0 --long_steps=5": "--long_steps only apply with --long_seq_length",
        "--max_seq_length=64 --long_predictions_per_seq=9": "--long_predictions_per_seq only apply with --long_seq_l",
        "--long_seq_length=32": "--long_seq_length=32 must be longer than --max_seq_length=32 (or 0)",
        "--long_seq_length=64 --long_steps=5 --num_train_steps=5": "--long_steps=5 must be in [1, --num_train_steps=5)",
        "--long_seq_length=64 --long_predictions_per_seq=65": "--long_predictions_per_seq=65 must be in [1, "
                                                             "--long_seq_length=64]",
        "--long_seq_length=64": "--long_seq_length needs --long_input_files",
        "--num_train_steps=20 unexpected": "unexpected arguments: unexpected (flags are --name=value).",
    }
    main_job_cases = {
        "--transfer_learning_rates=1e-3,x": "--transfer_learning_rates must be positive numbers",
        "--transfer_learning_rates=0": "--transfer_learning_rates must be positive numbers",
        "--transfer_epochs=0": "--transfer_epochs must be positive",
        "--vocab_size=5": "--vocab_size must be larger than the 5 special tokens",
        "--input_files=x.tfrecord --vocab_file=v.txt": "--input_files: the main job trains on the built-in corpus; "
                                                       "train on your TFRecords with tpu/pretrain.py.",
        # By default its last 10 % train at --transfer_seq_length (64), longer than --max_seq_length (32).
        "--long_steps=20 --num_train_steps=20": "--long_steps=20 must be in [1, --num_train_steps=20)",
        "--max_seq_length=64 --long_steps=9": "--long_steps only apply with --long_seq_length",
        "--long_seq_length=32": "--long_seq_length=32 must be longer than --max_seq_length=32 (or 0)",
        "--num_train_steps=0": "--num_train_steps must be positive",
    }
    # Valid flags get as far as reading the input files: a vocabulary that is not there.
    data = [f"--input_files={tmp_path}/none-*.tfrecord", f"--vocab_file={tmp_path}/v.txt"]
    for script, script_cases, given in ((PRETRAIN, cases, data), (MAIN_JOB, main_job_cases, [])):
        for argv, expected in script_cases.items():  # the later of two values wins
            error = _scripts().one_error(script, capfd, *given, *argv.split(), f"--output_dir={tmp_path}/out")
            assert error.startswith("--vocab_file: Vocabulary file not found") if expected is None else (
                expected in error), (script.name, argv, error)
    assert not (tmp_path / "out").exists()


def test_weight_decay_rate_is_the_optimizers():
    """--weight_decay_rate reaches BERT's optimizer for both --optimizer types."""
    module = _scripts().load_script(PRETRAIN)
    for optimizer_type in ("adamw", "lamb"):
        module.FLAGS([str(PRETRAIN), "--weight_decay_rate=0.05", f"--optimizer={optimizer_type}",
                      "--input_files=x.tfrecord", "--vocab_file=v.txt"])
        loop = module.build_loop(tf.distribute.get_strategy(), BertConfig.preset("tiny", vocab_size=50), None)
        assert loop.optimizer.weight_decay == 0.05, optimizer_type


@pytest.mark.slow
def test_in_a_fresh_process_bad_input_is_one_line_and_exit_code_1(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLED_DEVICE_TYPES"}  # as a user's shell has it
    run = subprocess.run([sys.executable, str(PRETRAIN), "--num_train_steps=20", "--num_warmup_steps=60",
                          f"--output_dir={tmp_path}/out"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.stderr.strip().splitlines()[-1].startswith("pretrain.py: error: flags ")
    assert "--num_warmup_steps=60 must be in [0, --num_train_steps=20]" in run.stderr
    if tf_startup.cuda_driver_missing():
        assert "cuInit" not in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_corpus_too_small_for_the_transfer_suite_skips_it_with_one_line(killed_and_resumed, capfd):
    """The killed run, its resumed run and a rerun of the finished one each say once why the suite
    is skipped; only a transfer flag set explicitly stops such a run, before training."""
    output, _, stdout, _, first_log = killed_and_resumed
    for printed in (first_log, stdout):
        assert printed.count("Transfer suite skipped") == 1 and SKIPPED in printed
    line = next(line for line in stdout.splitlines() if line.startswith(SKIPPED))
    assert re.fullmatch(r".*: \d+ (python|package) sentences for its train split from the documents kept out "
                        r"of pre-training, 250 needed\.\)", line), line
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["transfer_skipped"] == line and "transfer" not in metrics
    code, out, err = _scripts().run_script(MAIN_JOB, capfd, f"--output_dir={output}", *FLAGS)
    assert code == 0 and "finished run of 200 steps" in out and out.count(line) == 1, err[-3000:]


@pytest.fixture(scope="module")
def small_corpus_output(tmp_path_factory):
    """--output_dir of the runs on SMALL_CORPUS: both stop before training, the second reusing the
    data the first built."""
    return tmp_path_factory.mktemp("small_corpus") / "out"


SMALL_CORPUS = ["--corpus_packages=", "--max_documents=40", "--vocab_size=300", "--max_seq_length=32",
                "--max_predictions_per_seq=5", "--dupe_factor=1"]


@pytest.mark.slow
def test_a_transfer_flag_set_on_too_small_a_corpus_stops_before_training(small_corpus_output, capfd):
    error = _scripts().one_error(MAIN_JOB, capfd, *SMALL_CORPUS, "--transfer_epochs=2",
                                 f"--output_dir={small_corpus_output}")
    assert re.match(r"--transfer_epochs: the transfer suite needs more documents: task python_or_package: \d+ "
                    r"(python|package) sentences for its train split .*, 250 needed\. Use a larger --max_documents, or "
                    r"--transfer_learning_rates= to skip it\.$", error), error
    assert not (small_corpus_output / "checkpoints").exists()


def test_too_small_a_held_out_set_stops_before_training(small_corpus_output, capfd):
    error = _scripts().one_error(MAIN_JOB, capfd, *SMALL_CORPUS, "--transfer_learning_rates=",
                                 "--train_batch_size=512", "--num_train_steps=10", f"--output_dir={small_corpus_output}")
    assert re.match(r"--max_documents=40, --train_batch_size=512: The held-out data \S+ has \d+ examples, fewer "
                    r"than one batch \(512\); use more documents\.$", error), error
    assert not (small_corpus_output / "checkpoints").exists()
