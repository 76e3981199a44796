"""tpu/create_pretraining_data.py: runs in the test process (`main(argv)` through its `run` entry),
and one in a fresh process for what only a process shows (exit code, no traceback, no cuInit)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from keras_bert_lite import tf_startup
from keras_bert_lite.data.pretraining.writer import create_pretraining_data
from tests.examples import scripts

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tpu" / "create_pretraining_data.py"
BUILTIN_DOCUMENTS = 40
LENGTHS = ["--max_seq_length=64", "--max_predictions_per_seq=10"]


def _run(capfd, *argv):
    return scripts.run_script(SCRIPT, capfd, *argv)


def _error(capfd, *argv):
    return scripts.one_error(SCRIPT, capfd, *argv)


def _examples_written(stderr: str) -> int:
    return int(re.search(r"Wrote (\d+) examples", stderr).group(1))


def test_text_file_to_shards(corpus_file, real_vocab_file, tmp_path, capfd, data_helpers):
    code, _, stderr = _run(capfd, f"--input_file={corpus_file}", f"--output_file={tmp_path / 'out' / 'train.tfrecord'}",
                           "--num_shards=2", "--dupe_factor=2", "--random_seed=4", f"--vocab_file={real_vocab_file}",
                           *LENGTHS)
    assert code == 0, stderr[-3000:]
    shards = sorted((tmp_path / "out").iterdir())
    assert [p.name for p in shards] == ["train.tfrecord-00000-of-00002", "train.tfrecord-00001-of-00002"]
    parsed = data_helpers.parse_with_original_spec(shards, seq_length=64, max_predictions_per_seq=10)
    assert len(parsed["input_ids"]) == _examples_written(stderr) > 0
    assert re.search(r"Writing: 100%.*example/s", stderr)  # progress bar


def test_builtin_corpus_matches_the_library_byte_for_byte(documents, real_vocab_file, tmp_path, capfd):
    out = tmp_path / "builtin"
    code, _, stderr = _run(capfd, "--builtin_corpus", f"--max_documents={BUILTIN_DOCUMENTS}", "--dupe_factor=1",
                           "--random_seed=5", f"--output_file={out / 'a.tfrecord'},{out / 'b.tfrecord'}",
                           f"--vocab_file={real_vocab_file}", *LENGTHS)
    assert code == 0, stderr[-3000:]
    files = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    stats = create_pretraining_data(documents[:BUILTIN_DOCUMENTS], real_vocab_file, files, max_seq_length=64,
                                    max_predictions_per_seq=10, dupe_factor=1, seed=5)
    assert _examples_written(stderr) == stats.examples
    for ours, cli in zip(files, ("a.tfrecord", "b.tfrecord")):
        assert pathlib.Path(ours).read_bytes() == (out / cli).read_bytes()


def test_bad_input_is_one_line_naming_the_flag_and_leaves_nothing_behind(real_vocab_file, tmp_path, capfd):
    """Missing, unreadable (a folder given as a file: chmod does not stop root) and malformed
    inputs; each run fails before the corpus is read, and creates no file or folder."""
    (tmp_path / "afile").write_text("a file, not a folder")
    (tmp_path / "latin1.txt").write_bytes(b"First sentence here.\nCaf\xe9 au lait is served.\n")
    (tmp_path / "vocab_latin1.txt").write_bytes(b"[PAD]\n[UNK]\ncaf\xe9\n")
    (tmp_path / "inputs").mkdir()
    before = sorted(tmp_path.rglob("*"))
    output = f"--output_file={tmp_path / 'new' / 'deeper' / 'train.tfrecord'}"
    vocab = f"--vocab_file={real_vocab_file}"
    cases = {
        (f"--input_file={tmp_path / 'nothing-*.txt'}", output, vocab):
            r"^Input pattern '.*nothing-\*\.txt' matches no file\.$",
        (f"--input_file={tmp_path / 'inputs'}", output, vocab): r"^--input_file: .*/inputs is a folder, expected text files",
        (f"--input_file={tmp_path / 'latin1.txt'}", output, vocab): r"latin1\.txt.*(UTF-8|utf-8)",
        ("--builtin_corpus", output, f"--vocab_file={tmp_path / 'no_vocab.txt'}"):
            r"^--vocab_file: .*not found: .*no_vocab\.txt\.$",
        ("--builtin_corpus", output, f"--vocab_file={tmp_path}"): r"^--vocab_file: .* is a folder, expected a vocab\.txt file\.$",
        ("--builtin_corpus", output, f"--vocab_file={tmp_path / 'vocab_latin1.txt'}"):
            r"^--vocab_file: .*vocab_latin1\.txt.*(UTF-8|utf-8)",
        ("--builtin_corpus", vocab, f"--output_file={tmp_path / 'new' / 'first.tfrecord'},{tmp_path}"):
            r"^--output_file: Output file .* is an existing folder\.$",
        ("--builtin_corpus", vocab, f"--output_file={tmp_path / 'afile' / 'x.tfrecord'}"):
            r"^--output_file: Output file .*afile/x\.tfrecord cannot be written: .*\.$",
        (output, vocab): r"^Give exactly one corpus: --input_file, --builtin_corpus or --tfds_name\.$",
        ("--builtin_corpus", vocab): r"^flag --output_file=None: Flag --output_file must have a value other than None\.$",
        ("--builtin_corpus", output, vocab, "--max_seq_lenght=32"): r"^Unknown command line flag 'max_seq_lenght'",
    }
    for argv, expected in cases.items():
        error = _error(capfd, *argv, *LENGTHS)
        assert re.search(expected, error), (argv, error)
        assert sorted(tmp_path.rglob("*")) == before, argv  # no folder or file was made


@pytest.mark.slow
def test_in_a_fresh_process_bad_input_is_one_line_and_exit_code_1(tmp_path, real_vocab_file):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop(tf_startup.DEVICE_TYPES_VARIABLE, None)  # as a user's shell has it
    run = subprocess.run([sys.executable, str(SCRIPT), f"--input_file={tmp_path / 'in.txt'}",
                          f"--output_file={tmp_path / 'data' / 'train.tfrecord'}", f"--vocab_file={real_vocab_file}"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert run.stderr.strip().splitlines()[-1] == (
        f"create_pretraining_data.py: error: Input pattern '{tmp_path / 'in.txt'}' matches no file.")
    if tf_startup.cuda_driver_missing():
        assert "cuInit" not in run.stderr
    assert not list(tmp_path.iterdir())


BUILD_VOCAB = ROOT / "tpu" / "build_vocab.py"


@pytest.mark.slow
def test_build_vocab_learns_a_vocabulary_from_text_files(corpus_file, tmp_path, capfd):
    from keras_bert_lite.text.tokenizer import BertTokenizer

    output = tmp_path / "out" / "vocab.txt"
    # 600 of the file's ~2,000 lines hold enough words for 250 tokens (the learner's cost grows with the words).
    code, _, stderr = scripts.run_script(BUILD_VOCAB, capfd, f"--input_file={corpus_file}", f"--output_file={output}",
                                         "--vocab_size=250", "--max_lines=600")
    assert code == 0, stderr[-3000:]
    tokens = output.read_text().splitlines()
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and 0.95 * 250 <= len(tokens) <= 250
    assert re.search(r"Read \d+ lines from .*corpus\.txt", stderr) and f"Wrote {len(tokens)} tokens" in stderr
    assert BertTokenizer(str(output))(["the documentation"]).flat_values.shape[0] >= 2  # loads and tokenizes
    assert "fewer than vocab_size" not in stderr
    code, _, stderr = scripts.run_script(BUILD_VOCAB, capfd, f"--input_file={corpus_file}", f"--output_file={output}",
                                         "--vocab_size=100000", "--max_lines=50")
    assert code == 0 and "fewer than vocab_size=100000" in stderr
    for argv, expected in (
        ([f"--input_file={tmp_path}/none*.txt"], r"Input pattern '.*none\*\.txt' matches no file"),
        ([f"--input_file={corpus_file}", f"--output_file={tmp_path}"], r"--output_file: .* is an existing folder"),
        ([f"--input_file={tmp_path}"], r"--input_file: .* is a folder, expected text files"),
    ):
        assert re.search(expected, scripts.one_error(BUILD_VOCAB, capfd, *argv)), argv
