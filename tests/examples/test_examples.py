"""The example scripts end to end (subprocesses, run side by side) on the fixtures in the real
formats, with a tiny model, one epoch: from a .keras encoder, a Google checkpoint folder and a
Hugging Face folder."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.encoder import BertEncoder

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
COMMON = ["--num_train_epochs=1", "--train_batch_size=4", "--eval_batch_size=8", "--run_eagerly"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, real_vocab_file, minilm_dir):
    """Starts every script at once; each test waits for the one it checks."""
    from keras_bert_lite.checkpoints import save_google_checkpoint

    root = tmp_path_factory.mktemp("examples")
    encoder = BertEncoder(BertConfig.preset("tiny", num_hidden_layers=1))
    encoder.save(str(root / "encoder.keras"))
    google = root / "google"
    google.mkdir()
    save_google_checkpoint(encoder, str(google / "bert_model.ckpt"))
    encoder.config.to_json_file(google / "bert_config.json")
    shutil.copy(real_vocab_file, google / "vocab.txt")
    bad_glue = root / "bad_glue"
    bad_glue.mkdir()
    (bad_glue / "train.tsv").write_text("sentence\tlabel\ngood\t1\nbad\t2\n")
    (bad_glue / "dev.tsv").write_text("sentence\tlabel\nfine\t1\n")
    (root / "texts.txt").write_text("The cat sat on the mat.\nBERT reads both ways. ||| It was pre-trained.\n")
    keras_model = [f"--init_checkpoint={root / 'encoder.keras'}", f"--vocab_file={real_vocab_file}"]
    commands = {
        "classifier": ["run_classifier.py", "--task_name=mrpc", f"--data_dir={FIXTURES / 'glue' / 'MRPC'}",
                       "--max_seq_length=32", "--do_predict", f"--export_dir={root / 'classifier' / 'export'}",
                       *keras_model, *COMMON],
        "squad": ["run_squad.py", f"--train_file={FIXTURES / 'squad' / 'train-v1.1.json'}",
                  f"--predict_file={FIXTURES / 'squad' / 'dev-v1.1.json'}", "--max_seq_length=48",
                  "--doc_stride=16", "--max_query_length=16", *keras_model, *COMMON],
        "ner": ["run_ner.py", f"--train_file={FIXTURES / 'conll' / 'train.txt'}",
                f"--dev_file={FIXTURES / 'conll' / 'dev.txt'}", f"--init_checkpoint={google}",
                "--max_seq_length=16", *COMMON],
        "features": ["extract_features.py", f"--input_file={root / 'texts.txt'}",
                     f"--output_file={root / 'features' / 'out.jsonl'}", f"--init_checkpoint={minilm_dir}",
                     "--layers=-1,-2", "--max_seq_length=24"],
        "bad_label": ["run_classifier.py", "--task_name=sst2", f"--data_dir={bad_glue}",
                      f"--vocab_file={real_vocab_file}", "--preset=tiny"],
    }
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(ROOT))
    processes = {}
    for name, (script, *flags) in commands.items():
        out = root / name
        out.mkdir(exist_ok=True)
        if name != "features":
            flags.append(f"--output_dir={out}")
        processes[name] = (
            subprocess.Popen([sys.executable, str(ROOT / "examples" / script), *flags], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True),
            out,
        )
    yield processes
    for process, _ in processes.values():
        if process.poll() is None:
            process.kill()


def _finish(runs, name):
    process, out = runs[name]
    log, _ = process.communicate(timeout=600)
    return process.returncode, log, out


def test_run_classifier(runs):
    code, log, out = _finish(runs, "classifier")
    assert code == 0, log[-3000:]
    assert "2/2" in log and "━" in log  # Keras progress bar
    results = json.loads((out / "eval_results.json").read_text())
    assert set(results["best"]) == {"f1", "accuracy"} and len(results["epochs"]) == 1
    lines = (out / "dev_predictions.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction\tlabel" and len(lines) == 5
    predicted = [line.split("\t")[1] for line in lines[1:]]
    gold = [line.split("\t")[2] for line in lines[1:]]
    assert results["best"]["accuracy"] == pytest.approx(np.mean([p == g for p, g in zip(predicted, gold)]))
    assert (out / "test_results.tsv").read_text().splitlines()[1].split("\t")[0] == "0"
    assert (out / "best_model.keras").is_file() and (out / "export" / "saved_model.pb").is_file()


def test_run_squad(runs):
    from keras_bert_lite.data.squad import read_squad, squad_evaluate

    code, log, out = _finish(runs, "squad")
    assert code == 0, log[-3000:]
    predictions = json.loads((out / "predictions.json").read_text())
    dev = read_squad(FIXTURES / "squad" / "dev-v1.1.json", is_training=False)
    assert set(predictions) == {e.qas_id for e in dev}
    for example in dev:  # every answer is a piece of its context
        assert predictions[example.qas_id] in example.context
    nbest = json.loads((out / "nbest_predictions.json").read_text())
    assert all(0 < len(v) <= 20 and abs(sum(e["probability"] for e in v) - 1) < 1e-6 for v in nbest.values())
    results = json.loads((out / "eval_results.json").read_text())
    assert results["best"] == pytest.approx(squad_evaluate(dev, predictions))


def test_run_ner(runs):
    from keras_bert_lite.data.ner import entity_f1, read_conll

    code, log, out = _finish(runs, "ner")
    assert code == 0, log[-3000:]
    assert "Loading the Google checkpoint" in log
    blocks = (out / "predictions.txt").read_text().strip().split("\n\n")
    dev = read_conll(FIXTURES / "conll" / "dev.txt")
    assert len(blocks) == len(dev)
    gold = [[line.split()[1] for line in block.splitlines()] for block in blocks]
    predicted = [[line.split()[2] for line in block.splitlines()] for block in blocks]
    assert gold == [s.tags for s in dev]
    results = json.loads((out / "eval_results.json").read_text())
    assert results["best"]["f1"] == pytest.approx(entity_f1(gold, predicted)["f1"])


def test_extract_features_from_hugging_face_weights(runs, minilm_dir):
    import tensorflow as tf

    from keras_bert_lite.checkpoints import from_hf_checkpoint

    code, log, out = _finish(runs, "features")
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


def test_bad_input_is_one_clear_error(runs):
    code, log, _ = _finish(runs, "bad_label")
    assert code != 0
    assert "Error: " in log and "train.tsv, line 3: label '2' is not one of ['0', '1']" in log
    assert "Traceback" not in log
