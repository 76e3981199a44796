"""Every example script turns bad input into one line `<script>.py: error: ...` naming the file or flag,
exit code 1, no traceback, and creates no output folder: a missing file, an unreadable one (a folder
given as a file: tests may run as root, which chmod 000 does not stop) and a malformed one. The
scripts run in this process; test_examples.py runs them in fresh processes."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture
def bad_files(tmp_path):
    """A folder named like a file, a file with invalid UTF-8 and malformed files of each format."""
    (tmp_path / "folder.txt").mkdir()
    (tmp_path / "latin1.txt").write_bytes(b"fine\ncaf\xe9\n")
    glue = tmp_path / "glue"
    glue.mkdir()
    (glue / "train.tsv").write_text("sentence\tlabel\ngood\t1\nbad\t2\n")
    (glue / "dev.tsv").write_text("sentence\tlabel\nfine\t1\n")
    folder_glue = tmp_path / "folder_glue"
    (folder_glue / "train.tsv").mkdir(parents=True)
    (tmp_path / "squad.json").write_text('{"version": "1.1", "data": [')
    (tmp_path / "conll.txt").write_text("-DOCSTART- -X- -X- O\n\nAnna NNP B-NP\n")
    return tmp_path


def _errors(scripts, capfd, script, out, cases):
    for argv, expected in cases.items():
        error = scripts.one_error(EXAMPLES / script, capfd, *argv, f"--output_dir={out}")
        assert re.search(expected, error), (script, argv, error)
        assert not out.exists(), (script, argv)


def test_run_classifier(scripts, capfd, bad_files, real_vocab_file, tmp_path):
    out = tmp_path / "out"
    common = ["--task_name=sst2", f"--vocab_file={real_vocab_file}", "--preset=tiny"]
    copied = tmp_path / "copied"
    copied.mkdir()
    cases = {
        (*common, f"--data_dir={tmp_path / 'none'}"): rf"^GLUE file not found: {tmp_path}/none/train\.tsv",
        (*common, f"--data_dir={bad_files / 'folder_glue'}"): rf"{bad_files}/folder_glue/train\.tsv",
        (*common, f"--data_dir={bad_files / 'glue'}"): r"train\.tsv, line 3: label '2' is not one of \['0', '1'\]",
        ("--task_name=mrpc", f"--data_dir={FIXTURES / 'glue' / 'MRPC'}", f"--init_checkpoint={copied / 'none.keras'}"):
            rf"{copied}/none\.keras",
        ("--task_name=nope", f"--data_dir={bad_files / 'glue'}"): r"nope",
        (*common, f"--data_dir={bad_files / 'glue'}", "--num_train_epochs=x"): r"^flag --num_train_epochs=x: ",
        (f"--data_dir={bad_files / 'glue'}",): r"^flag --task_name=None: Flag --task_name must have a value",
    }
    _errors(scripts, capfd, "run_classifier.py", out, cases)


def test_run_squad(scripts, capfd, bad_files, real_vocab_file, tmp_path):
    out = tmp_path / "out"
    dev = f"--predict_file={FIXTURES / 'squad' / 'dev-v1.1.json'}"
    common = [f"--vocab_file={real_vocab_file}", "--preset=tiny", dev]
    cases = {
        (*common, f"--train_file={tmp_path / 'none.json'}"): rf"{tmp_path}/none\.json",
        (*common, f"--train_file={bad_files / 'folder.txt'}"): rf"{bad_files}/folder\.txt",
        (*common, f"--train_file={bad_files / 'squad.json'}"): rf"{bad_files}/squad\.json",
        (*common, f"--train_file={bad_files / 'latin1.txt'}"): rf"{bad_files}/latin1\.txt",
    }
    _errors(scripts, capfd, "run_squad.py", out, cases)


def test_run_ner(scripts, capfd, bad_files, real_vocab_file, tmp_path):
    out = tmp_path / "out"
    common = [f"--vocab_file={real_vocab_file}", "--preset=tiny", f"--dev_file={FIXTURES / 'conll' / 'dev.txt'}"]
    cases = {
        (*common, f"--train_file={tmp_path / 'none.txt'}"): rf"{tmp_path}/none\.txt",
        (*common, f"--train_file={bad_files / 'folder.txt'}"): rf"{bad_files}/folder\.txt",
        (*common, f"--train_file={bad_files / 'conll.txt'}"): rf"{bad_files}/conll\.txt, line 3",
        (*common, f"--train_file={bad_files / 'latin1.txt'}"): rf"{bad_files}/latin1\.txt",
    }
    _errors(scripts, capfd, "run_ner.py", out, cases)


def test_extract_features(scripts, capfd, bad_files, real_vocab_file, tmp_path):
    out = tmp_path / "out"
    common = [f"--vocab_file={real_vocab_file}", "--preset=tiny", f"--output_file={out / 'features.jsonl'}"]
    cases = {
        (*common, f"--input_file={tmp_path / 'in.txt'}"): rf"^{tmp_path}/in\.txt; No such file or directory$",
        (*common, f"--input_file={bad_files / 'folder.txt'}"): rf"{bad_files}/folder\.txt",
        (*common, f"--input_file={bad_files / 'latin1.txt'}"): rf"{bad_files}/latin1\.txt, line 2: not valid UTF-8",
        (f"--vocab_file={real_vocab_file}", f"--input_file={bad_files / 'latin1.txt'}", f"--output_file={out}.csv"):
            r"must end in \.jsonl or \.npz",
    }
    for argv, expected in cases.items():
        error = scripts.one_error(EXAMPLES / "extract_features.py", capfd, *argv)
        assert re.search(expected, error), (argv, error)
        assert not out.exists(), argv


def test_no_vocabulary_beside_the_weights(scripts, capfd, tmp_path):
    """A .keras encoder without vocab.txt beside it and no --vocab_file."""
    from keras_bert_lite.config import BertConfig
    from keras_bert_lite.models.encoder import BertEncoder

    (tmp_path / "copied").mkdir()
    BertEncoder(BertConfig.preset("tiny", num_hidden_layers=1)).save(str(tmp_path / "copied" / "encoder.keras"))
    out = tmp_path / "out"
    error = scripts.one_error(EXAMPLES / "run_classifier.py", capfd, "--task_name=mrpc",
                              f"--data_dir={FIXTURES / 'glue' / 'MRPC'}",
                              f"--init_checkpoint={tmp_path / 'copied' / 'encoder.keras'}", f"--output_dir={out}")
    assert "copied/encoder.keras: no vocab.txt beside the weights" in error
    assert not out.exists()
