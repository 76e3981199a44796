import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import tensorflow as tf

import keras_bert_lite
from keras_bert_lite.atomic import TEMPORARY_MARKER, atomic_write, copy_atomically, write_text_atomically

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(keras_bert_lite.__file__))


def test_success_publishes_every_path_in_order(tmp_path):
    first, second = tmp_path / "a" / "one.txt", tmp_path / "two.txt"
    with atomic_write(first, second) as (t1, t2):
        for temporary in (t1, t2):
            assert TEMPORARY_MARKER in temporary
            with open(temporary, "w") as f:
                f.write(os.path.basename(temporary))
        assert not first.exists() and not second.exists()
    assert first.read_text().startswith(".one.txt") and second.read_text().startswith(".two.txt")
    assert sorted(os.listdir(tmp_path)) == ["a", "two.txt"]


def test_an_exception_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(path) as (temporary,):
            with open(temporary, "w") as f:
                f.write("new")
            raise RuntimeError("failed half-way")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_prefix_writers_publish_every_suffix(tmp_path):
    prefix = str(tmp_path / "ckpt" / "bert_model.ckpt")
    with atomic_write(prefix, suffixes=(".data-00000-of-00001", ".index")) as (temporary,):
        tf.raw_ops.SaveV2(prefix=temporary, tensor_names=["w"], shape_and_slices=[""], tensors=[tf.ones([2])])
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index"]
    assert tf.train.load_variable(prefix, "w").tolist() == [1.0, 1.0]


def test_a_folder_destination_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "data").mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        with atomic_write(tmp_path / "data"):
            pytest.fail("the block must not run")


def test_text_and_copy_helpers(tmp_path):
    source = write_text_atomically(tmp_path / "vocab.txt", "[PAD]\n")
    assert copy_atomically(source, tmp_path / "copy" / "vocab.txt") == str(tmp_path / "copy" / "vocab.txt")
    assert (tmp_path / "copy" / "vocab.txt").read_text() == "[PAD]\n"
    assert copy_atomically(source, source) == source


@pytest.mark.slow
def test_a_killed_writer_leaves_the_previous_file_whole(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"previous")
    script = textwrap.dedent(f"""
        import sys, time
        from keras_bert_lite.atomic import atomic_write
        with atomic_write({str(path)!r}) as (temporary,):
            with open(temporary, "wb") as f:
                f.write(b"x" * 1000)
                f.flush()
                print("writing", flush=True)
                time.sleep(60)
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": _PACKAGE_ROOT})
    try:
        assert process.stdout.readline().strip() == "writing"
        time.sleep(0.2)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert path.read_bytes() == b"previous"
    leftovers = [name for name in os.listdir(tmp_path) if name != "model.bin"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".model.bin" + TEMPORARY_MARKER)
