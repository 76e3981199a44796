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
    (tmp_path / "own.csv").write_text('text,sentiment\n"good, really",pos\nbad,neg\nso-so,meh\n')
    (tmp_path / "squad.json").write_text('{"version": "1.1", "data": [')
    (tmp_path / "conll.txt").write_text("-DOCSTART- -X- -X- O\n\nAnna NNP B-NP\n")
    return tmp_path


# (script, flags, pattern of the error line); `{tmp}` is the test's folder (holding `bad_files`),
# `{vocab}` the real vocabulary, `{fixtures}` tests/fixtures. Every script but extract_features also
# gets --output_dir={tmp}/out.
SST2 = ["--task_name=sst2", "--vocab_file={vocab}", "--preset=tiny"]
OWN = ["--vocab_file={vocab}", "--preset=tiny", "--train_file={tmp}/own.csv", "--eval_file={tmp}/own.csv",
       "--label_column=sentiment"]
SQUAD = ["--vocab_file={vocab}", "--preset=tiny", "--predict_file={fixtures}/squad/dev-v1.1.json"]
NER = ["--vocab_file={vocab}", "--preset=tiny", "--dev_file={fixtures}/conll/dev.txt"]
FEATURES = ["--vocab_file={vocab}", "--preset=tiny", "--output_file={tmp}/out/features.jsonl"]
CASES = [
    ("run_classifier.py", [*SST2, "--data_dir={tmp}/none"], r"^GLUE file not found: {tmp}/none/train\.tsv"),
    ("run_classifier.py", [*SST2, "--data_dir={tmp}/folder_glue"], r"{tmp}/folder_glue/train\.tsv"),
    ("run_classifier.py", [*SST2, "--data_dir={tmp}/glue"],
     r"train\.tsv, line 3: label '2' is not one of \['0', '1'\]"),
    ("run_classifier.py",
     ["--task_name=mrpc", "--data_dir={fixtures}/glue/MRPC", "--init_checkpoint={tmp}/copied/none.keras"],
     r"{tmp}/copied/none\.keras"),
    ("run_classifier.py", ["--task_name=nope", "--data_dir={tmp}/glue"], r"nope"),
    ("run_classifier.py", [*SST2, "--data_dir={tmp}/glue", "--num_train_epochs=x"],
     r"^flag --num_train_epochs=x: "),
    ("run_classifier.py", ["--data_dir={tmp}/glue"],
     r"^Give --task_name and --data_dir \(a GLUE task\), or --train_file, --eval_file, --text_columns and "
     r"--label_column \(your own data\); missing: --train_file, --eval_file, --text_columns, --label_column\.$"),
    ("run_classifier.py", [*OWN, "--text_columns=review"], r"^{tmp}/own\.csv, line 1: the header \['text', "
     r"'sentiment'\] has no column 'review'\.$"),
    ("run_classifier.py", [*OWN, "--text_columns=text", "--label_names=neg,pos"],
     r"^{tmp}/own\.csv, line 4: label 'meh' is not one of \['neg', 'pos'\]\.$"),
    ("run_classifier.py", [*OWN, "--text_columns=text", "--task_name=sst2"], r"^--task_name reads the GLUE files "
     r"of --data_dir; drop --train_file, --eval_file, --text_columns, --label_column\.$"),
    # Before any file is read: the training file does not exist.
    ("run_classifier.py", [*OWN, "--text_columns=text", "--train_file={tmp}/none.csv", "--pooling=mean,maximum"],
     r"^--pooling=mean,maximum: BertClassifier: pooling must be 'pooler' or modes of SentencePooling .*maximum"),
    ("run_squad.py", [*SQUAD, "--train_file={tmp}/none.json"], r"{tmp}/none\.json"),
    ("run_squad.py", [*SQUAD, "--train_file={tmp}/folder.txt"], r"{tmp}/folder\.txt"),
    ("run_squad.py", [*SQUAD, "--train_file={tmp}/squad.json"], r"{tmp}/squad\.json"),
    ("run_squad.py", [*SQUAD, "--train_file={tmp}/latin1.txt"], r"{tmp}/latin1\.txt"),
    ("run_ner.py", [*NER, "--train_file={tmp}/none.txt"], r"{tmp}/none\.txt"),
    ("run_ner.py", [*NER, "--train_file={tmp}/folder.txt"], r"{tmp}/folder\.txt"),
    ("run_ner.py", [*NER, "--train_file={tmp}/conll.txt"], r"{tmp}/conll\.txt, line 3"),
    ("run_ner.py", [*NER, "--train_file={tmp}/latin1.txt"], r"{tmp}/latin1\.txt"),
    ("extract_features.py", [*FEATURES, "--input_file={tmp}/in.txt"],
     r"^{tmp}/in\.txt; No such file or directory$"),
    ("extract_features.py", [*FEATURES, "--input_file={tmp}/folder.txt"], r"{tmp}/folder\.txt"),
    ("extract_features.py", [*FEATURES, "--input_file={tmp}/latin1.txt"],
     r"{tmp}/latin1\.txt, line 2: not valid UTF-8"),
    ("extract_features.py",
     ["--vocab_file={vocab}", "--input_file={tmp}/latin1.txt", "--output_file={tmp}/out.csv"],
     r"must end in \.jsonl or \.npz"),
]


@pytest.mark.parametrize("script, argv, expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_bad_input(scripts, capfd, bad_files, real_vocab_file, script, argv, expected):
    fill = dict(tmp=bad_files, vocab=real_vocab_file, fixtures=FIXTURES)
    (bad_files / "copied").mkdir()
    out = bad_files / "out"
    argv = [flag.format(**fill) for flag in argv]
    if script != "extract_features.py":
        argv.append(f"--output_dir={out}")
    error = scripts.one_error(EXAMPLES / script, capfd, *argv)
    assert re.search(expected.format(**fill), error), (script, argv, error)
    assert not out.exists(), (script, argv)


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
