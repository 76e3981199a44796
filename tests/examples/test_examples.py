"""The example scripts end to end on the fixtures in the real formats, with a tiny model, one
epoch: from our output folder, a .keras encoder, a Google checkpoint folder and a Hugging Face
folder. They run in this process as `python <script>.py` runs them (tests/examples/scripts.py);
the killed-and-resumed run uses fresh processes with the environment a user has (no TF_*
variables), so their start-up logs are checked there. Bad input: test_bad_input.py."""

import ast
import io
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.encoder import BertEncoder

pytestmark = pytest.mark.slow  # fits of every script, kills

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
COMMON = ["--num_train_epochs=1", "--train_batch_size=4", "--eval_batch_size=8", "--run_eagerly"]
# What the scripts' start-up (examples/common.py, keras_bert_lite.tf_startup) decides; the tests'
# own settings are left out.
ENV = {k: v for k, v in os.environ.items()
       if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS", "TF_ENABLED_DEVICE_TYPES")}
ENV["PYTHONPATH"] = str(ROOT)


def _start(script, *flags):
    return subprocess.Popen([sys.executable, str(ROOT / "examples" / script), *flags], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, real_vocab_file):
    """A tiny encoder as tpu/pretrain.py leaves it (encoder.keras + vocab.txt), and as a Google folder."""
    from keras_bert_lite.interop import save_google_checkpoint

    root = tmp_path_factory.mktemp("pretrained")
    encoder = BertEncoder(BertConfig.preset("tiny", num_hidden_layers=1))
    ours = root / "pretrain"
    ours.mkdir()
    encoder.save(str(ours / "encoder.keras"))
    shutil.copy(real_vocab_file, ours / "vocab.txt")
    google = root / "google"
    google.mkdir()
    save_google_checkpoint(encoder, str(google / "bert_model.ckpt"))
    encoder.config.to_json_file(google / "bert_config.json")
    shutil.copy(real_vocab_file, google / "vocab.txt")
    return {"ours": ours, "google": google}


def _run(scripts, capfd, script, *flags):
    """(exit code, stdout + stderr and log lines) of `python examples/<script> flags...`, run here."""
    code, out, err = scripts.run_script(ROOT / "examples" / script, capfd, *flags)
    return code, out + err


def _weight_groups(path) -> set[str]:
    import h5py

    with zipfile.ZipFile(path) as archive, archive.open("model.weights.h5") as f:
        with h5py.File(io.BytesIO(f.read()), "r") as weights:
            return set(weights)


def _scalars(log_dir) -> dict[str, list[tuple[int, float]]]:
    """TensorBoard scalars written under `log_dir`: tag -> [(step, value)]."""
    import tensorflow as tf

    values = {}
    for path in sorted(pathlib.Path(log_dir).glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                values.setdefault(value.tag, []).append((event.step, float(tf.make_ndarray(value.tensor))))
    return values


def assert_calm(log: str) -> None:
    """None of the alarming lines that do not apply to a CPU fine-tuning run."""
    for line in ("cuInit", "DT_INT64", "shuffle=True", "cpu_feature_guard", "Assets written", "Traceback"):
        assert line not in log, line


def test_run_classifier_from_our_pretraining_folder(scripts, capfd, pretrained, tmp_path):
    out = tmp_path / "classifier"
    code, log = _run(scripts, capfd, "run_classifier.py", "--task_name=mrpc", f"--data_dir={FIXTURES / 'glue' / 'MRPC'}",
                     f"--init_checkpoint={pretrained['ours']}", "--label_names=different,paraphrase",
                     "--max_seq_length=32", "--do_predict", f"--export_dir={out / 'export'}", "--save_summary_steps=1",
                     *COMMON, f"--output_dir={out}")
    assert code == 0, log[-3000:]
    assert "Loading the keras checkpoint" in log and "is uncased" in log  # vocab.txt found beside encoder.keras
    assert "2/2" in log and "━" in log and "val_accuracy" in log  # Keras progress bar with the dev metrics
    assert_calm(log)
    results = json.loads((out / "eval_results.json").read_text())
    assert set(results["best"]) == {"f1", "accuracy"} and len(results["epochs"]) == 1
    assert results["epochs"][0]["step"] == 2
    lines = (out / "dev_predictions.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction\tlabel" and len(lines) == 5
    predicted = [line.split("\t")[1] for line in lines[1:]]
    gold = [line.split("\t")[2] for line in lines[1:]]
    assert set(predicted + gold) <= {"different", "paraphrase"}  # --label_names
    assert results["best"]["accuracy"] == pytest.approx(np.mean([p == g for p, g in zip(predicted, gold)]))
    test_lines = (out / "test_results.tsv").read_text().splitlines()
    assert test_lines[1].split("\t")[0] == "0" and test_lines[1].split("\t")[1] in ("0", "1")  # GLUE's labels
    assert (out / "export" / "saved_model.pb").is_file()
    assert _weight_groups(out / "best_model.keras") == {"layers", "vars"}  # no optimizer state
    assert not (out / "backup").exists()  # training completed
    train, evaluation = _scalars(out / "logs" / "train"), _scalars(out / "logs" / "eval")
    assert [step for step, _ in train["loss"]] == [1, 2] and "learning_rate" in train
    assert evaluation["accuracy"] == [(2, pytest.approx(results["best"]["accuracy"]))]


@pytest.mark.slow
def test_run_classifier_on_your_own_file_with_string_labels(scripts, capfd, pretrained, tmp_path):
    """A TSV in SST-2's layout with labels pos/neg (GLUE's reader takes only 0/1), mean-pooled."""
    tsv = tmp_path / "reviews.tsv"
    tsv.write_text("sentence\tlabel\n" + "a warm, funny film\tpos\ndull and far too long\tneg\n" * 3)
    out = tmp_path / "own"
    code, log = _run(scripts, capfd, "run_classifier.py", f"--train_file={tsv}", f"--eval_file={tsv}",
                     "--text_columns=sentence", "--label_column=label", "--label_names=neg,pos",
                     f"--init_checkpoint={pretrained['ours']}", "--max_seq_length=16", "--pooling=mean", *COMMON,
                     f"--output_dir={out}")
    assert code == 0, log[-3000:]
    assert "reviews.tsv: classes 0=neg, 1=pos" in log
    lines = (out / "dev_predictions.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction\tlabel" and len(lines) == 7
    assert [line.split("\t")[2] for line in lines[1:]] == ["pos", "neg"] * 3 and lines[1].startswith("line 2\t")
    results = json.loads((out / "eval_results.json").read_text())
    assert set(results["best"]) == {"accuracy"}
    with zipfile.ZipFile(out / "best_model.keras") as saved:
        assert '"pooling": ["mean"]' in saved.read("config.json").decode()


def test_help_lists_the_scripts_own_flags(scripts, capfd, monkeypatch):
    """`python <script>.py --help`, run in this process as `python` runs it."""
    training = ("--init_checkpoint", "--output_dir", "--num_train_epochs", "--learning_rate", "--max_seq_length",
                "--export_dir", "--max_steps")
    expected = {
        "run_classifier.py": (*training, "--label_names", "--train_file", "--text_columns", "--label_column"),
        "run_ner.py": (*training, "--label_names"),
        "run_squad.py": (*training, "--train_file", "--doc_stride"),
        "extract_features.py": ("--init_checkpoint", "--max_seq_length", "--input_file", "--layers"),
    }
    for script, own_flags in expected.items():
        path = ROOT / "examples" / script
        out = scripts.help_text(path, capfd, monkeypatch)
        assert ast.get_docstring(ast.parse(path.read_text())).splitlines()[0] in out  # the script's own usage
        for flag in own_flags:
            assert f"  {flag}" in out, (script, flag)
        assert "--tt_check_filter" not in out  # absl/TF's own flags stay in --helpfull


@pytest.mark.subprocess
def test_a_killed_run_resumes_where_it_stopped(tmp_path, pretrained):
    """Killed after a backup, the same command continues from it to the planned step count; both
    fresh processes start without the alarming lines of `assert_calm`."""
    out = tmp_path / "mrpc"
    flags = ["--task_name=mrpc", f"--data_dir={FIXTURES / 'glue' / 'MRPC'}", f"--init_checkpoint={pretrained['ours']}",
             "--max_seq_length=16", "--num_train_epochs=2", "--train_batch_size=2", "--eval_batch_size=8",
             "--save_checkpoints_steps=1", "--run_eagerly", f"--output_dir={out}"]  # 4 steps per epoch
    first = _start("run_classifier.py", *flags)
    state = out / "backup" / "checkpoint"
    deadline = time.time() + 600
    while not (state.exists() and "ckpt-3" in state.read_text()) and first.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert first.poll() is None, "the run ended before it could be killed"
    first.send_signal(signal.SIGKILL)
    first_log, _ = first.communicate()
    assert_calm(first_log)
    second = _start("run_classifier.py", *flags)
    log, _ = second.communicate(timeout=600)
    assert second.returncode == 0, log[-3000:]
    assert_calm(log)
    resumed = int(log.split("Resuming at step ")[1].split()[0])
    assert resumed >= 3
    history = json.loads((out / "eval_results.json").read_text())["epochs"]
    assert [(e["epoch"], e["step"]) for e in history] == [(1, 4), (2, 8)]
    assert not (out / "backup").exists()


def test_run_squad(scripts, capfd, pretrained, real_vocab_file, tmp_path):
    from keras_bert_lite.data.squad import read_squad, squad_evaluate

    out = tmp_path / "squad"
    code, log = _run(scripts, capfd, "run_squad.py", f"--train_file={FIXTURES / 'squad' / 'train-v1.1.json'}",
                     f"--predict_file={FIXTURES / 'squad' / 'dev-v1.1.json'}", "--max_seq_length=48", "--doc_stride=16",
                     "--max_query_length=16", f"--init_checkpoint={pretrained['ours'] / 'encoder.keras'}",
                     f"--vocab_file={real_vocab_file}", *COMMON, f"--output_dir={out}")
    assert code == 0, log[-3000:]
    assert "Gradients do not exist" not in log  # the span head does not read the pooler, which is not trained
    assert _weight_groups(out / "best_model.keras") == {"layers", "vars"}  # no optimizer state
    assert (out / "logs" / "train").is_dir() and not (out / "backup").exists()
    predictions = json.loads((out / "predictions.json").read_text())
    dev = read_squad(FIXTURES / "squad" / "dev-v1.1.json", is_training=False)
    assert set(predictions) == {e.qas_id for e in dev}
    for example in dev:  # every answer is a piece of its context
        assert predictions[example.qas_id] in example.context
    nbest = json.loads((out / "nbest_predictions.json").read_text())
    assert all(0 < len(v) <= 20 and abs(sum(e["probability"] for e in v) - 1) < 1e-6 for v in nbest.values())
    results = json.loads((out / "eval_results.json").read_text())
    assert results["best"] == pytest.approx(squad_evaluate(dev, predictions))


def test_run_ner(scripts, capfd, pretrained, tmp_path):
    from keras_bert_lite.data.ner import entity_f1, read_conll

    out = tmp_path / "ner"
    code, log = _run(scripts, capfd, "run_ner.py", f"--train_file={FIXTURES / 'conll' / 'train.txt'}",
                     f"--dev_file={FIXTURES / 'conll' / 'dev.txt'}", f"--init_checkpoint={pretrained['google']}",
                     "--max_seq_length=16", "--max_steps=1", *COMMON, f"--output_dir={out}")
    assert code == 0, log[-3000:]
    assert "Loading the google checkpoint" in log and "is uncased" in log
    assert_calm(log)
    blocks = (out / "predictions.txt").read_text().strip().split("\n\n")
    dev = read_conll(FIXTURES / "conll" / "dev.txt")
    assert len(blocks) == len(dev)
    gold = [[line.split()[1] for line in block.splitlines()] for block in blocks]
    predicted = [[line.split()[2] for line in block.splitlines()] for block in blocks]
    assert gold == [s.tags for s in dev]
    results = json.loads((out / "eval_results.json").read_text())
    assert results["best"]["f1"] == pytest.approx(entity_f1(gold, predicted)["f1"])
    assert [e["step"] for e in results["epochs"]] == [1]  # --max_steps=1


def test_extract_features_from_hugging_face_weights(scripts, capfd, minilm_dir, tmp_path):
    import tensorflow as tf

    from keras_bert_lite import from_hf_checkpoint

    (tmp_path / "texts.txt").write_text("The cat sat on the mat.\nBERT reads both ways. ||| It was pre-trained.\n")
    out = tmp_path / "features"
    code, log = _run(scripts, capfd, "extract_features.py", f"--input_file={tmp_path / 'texts.txt'}",
                     f"--output_file={out / 'out.jsonl'}", f"--init_checkpoint={minilm_dir}", "--layers=-1,-2",
                     "--max_seq_length=24")
    assert code == 0, log[-3000:]
    records = [json.loads(line) for line in (out / "out.jsonl").read_text().splitlines()]
    assert [r["linex_index"] for r in records] == [0, 1]
    assert [t["token"] for t in records[0]["features"]][:4] == ["[CLS]", "the", "cat", "sat"]
    tokens = [t["token"] for t in records[1]["features"]]
    assert tokens.count("[SEP]") == 2 and tokens[-1] == "[SEP]"
    encoder, preprocessor = from_hf_checkpoint(minilm_dir, seq_length=24)
    # Each line is packed on its own: the first is a single text although the second is a pair.
    assert [t["token"] for t in records[0]["features"]].count("[SEP]") == 1
    reference = encoder(preprocessor(tf.constant(["The cat sat on the mat."])), training=False)
    first = records[0]["features"]
    assert [layer["index"] for layer in first[1]["layers"]] == [-1, -2]
    values = np.array([t["layers"][0]["values"] for t in first])
    np.testing.assert_allclose(values, reference["sequence_output"][0, : len(first)], atol=1e-4)
