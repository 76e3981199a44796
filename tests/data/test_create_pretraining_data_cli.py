"""tpu/create_pretraining_data.py end to end, in subprocesses started together."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from keras_bert_lite.data.pretraining.writer import create_pretraining_data

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tpu" / "create_pretraining_data.py"
BUILTIN_DOCUMENTS = 40


@pytest.fixture(scope="module")
def runs(corpus_file, real_vocab_file, tmp_path_factory):
    """name -> (returncode, stderr, output directory) for a file run, a built-in run and a bad run."""
    directory = tmp_path_factory.mktemp("cli")
    common = [f"--vocab_file={real_vocab_file}", "--max_seq_length=64", "--max_predictions_per_seq=10"]
    commands = {
        "file": [
            f"--input_file={corpus_file}",
            f"--output_file={directory / 'file' / 'train.tfrecord'}",
            "--num_shards=2",
            "--dupe_factor=2",
            "--random_seed=4",
        ],
        "builtin": [
            "--builtin_corpus",
            f"--max_documents={BUILTIN_DOCUMENTS}",
            "--dupe_factor=1",
            "--random_seed=5",
            f"--output_file={directory / 'builtin' / 'a.tfrecord'},{directory / 'builtin' / 'b.tfrecord'}",
        ],
        "missing_input": [
            f"--input_file={directory / 'nothing-*.txt'}",
            f"--output_file={directory / 'x.tfrecord'}",
        ],
        # Each fails before the corpus is read: one line naming the flag, nothing written.
        "vocab_folder": [
            "--builtin_corpus",
            f"--output_file={directory / 'bad' / 'v.tfrecord'}",
            f"--vocab_file={directory}",
        ],
        "output_folder": ["--builtin_corpus", f"--output_file={directory / 'bad' / 'first.tfrecord'},{directory}"],
        "output_under_file": ["--builtin_corpus", f"--output_file={directory / 'afile' / 'x.tfrecord'}"],
    }
    (directory / "bad").mkdir()
    (directory / "afile").write_text("a file, not a folder")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    processes = {
        name: subprocess.Popen(
            [sys.executable, str(SCRIPT), *common, *args],
            cwd=directory,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, args in commands.items()
    }
    results = {}
    for name, process in processes.items():
        _, stderr = process.communicate(timeout=300)
        results[name] = (process.returncode, stderr, directory)
    return results


def _examples_written(stderr: str) -> int:
    return int(re.search(r"Wrote (\d+) examples", stderr).group(1))


def test_text_file_to_shards(runs, data_helpers):
    returncode, stderr, directory = runs["file"]
    assert returncode == 0, stderr[-3000:]
    shards = sorted((directory / "file").iterdir())
    assert [p.name for p in shards] == ["train.tfrecord-00000-of-00002", "train.tfrecord-00001-of-00002"]
    parsed = data_helpers.parse_with_original_spec(shards, seq_length=64, max_predictions_per_seq=10)
    assert len(parsed["input_ids"]) == _examples_written(stderr) > 0
    assert re.search(r"Writing: 100%.*example/s", stderr)  # progress bar


def test_builtin_corpus_matches_the_library_byte_for_byte(runs, documents, real_vocab_file, tmp_path):
    returncode, stderr, directory = runs["builtin"]
    assert returncode == 0, stderr[-3000:]
    files = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    stats = create_pretraining_data(
        documents[:BUILTIN_DOCUMENTS],
        real_vocab_file,
        files,
        max_seq_length=64,
        max_predictions_per_seq=10,
        dupe_factor=1,
        seed=5,
    )
    assert _examples_written(stderr) == stats.examples
    for ours, cli in zip(files, ("a.tfrecord", "b.tfrecord")):
        assert pathlib.Path(ours).read_bytes() == (directory / "builtin" / cli).read_bytes()


def test_bad_input_is_one_clear_message(runs):
    returncode, stderr, directory = runs["missing_input"]
    assert returncode != 0
    assert re.search(r"error: Input pattern '.*nothing-\*\.txt' matches no file", stderr)
    assert "Traceback" not in stderr
    assert not list(directory.glob("x.tfrecord*"))


@pytest.mark.parametrize(
    "name, message",
    [
        ("vocab_folder", r"error: --vocab_file: .* is a folder, expected a vocab\.txt file\.$"),
        ("output_folder", r"error: --output_file: Output file .* is an existing folder\.$"),
        ("output_under_file", r"error: --output_file: Output file .*afile/x\.tfrecord cannot be written: .*\.$"),
    ],
)
def test_bad_flags_fail_before_any_work(runs, name, message):
    returncode, stderr, directory = runs[name]
    assert returncode != 0
    last_line = stderr.strip().splitlines()[-1]
    assert re.search(message, last_line), stderr[-2000:]
    assert "Traceback" not in stderr and "Corpus:" not in stderr
    assert not list((directory / "bad").iterdir())
