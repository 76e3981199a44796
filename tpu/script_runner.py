"""Start-up and error handling shared by every script (tpu/ and examples/): each imports this module
first (the examples through `examples/common.py`), which calls `set_tensorflow_environment`.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable


def set_tensorflow_environment() -> None:
    """Sets what TensorFlow reads once, when it loads (values already set win): oneDNN kernels on
    (TensorFlow leaves them off on some CPUs), TensorFlow's C++ INFO and WARNING lines off, and,
    through `keras_bert_lite.tf_startup`, no GPU probe (and its `cuInit` error line) on a machine
    without an NVIDIA driver."""
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    importlib.import_module("keras_bert_lite.tf_startup")


set_tensorflow_environment()

import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402

# What bad input (a flag, or a file that is missing, unreadable or malformed) raises; a run that
# stops on a non-finite loss (FloatingPointError) ends the same way.
INPUT_ERRORS = (ValueError, KeyError, OSError, RuntimeError, FloatingPointError, tf.errors.OpError)


def first_line(error: BaseException) -> str:
    """The first line of an error's message (its type's name if it has none)."""
    message = error.message if isinstance(error, tf.errors.OpError) else str(error)
    if isinstance(error, KeyError) and error.args:
        message = str(error.args[0])
    return (message.strip().splitlines() or [type(error).__name__])[0]


def run(main: Callable[[list[str]], None], argv: list[str] | None = None,
        describe: Callable[[BaseException], str] = first_line) -> None:
    """Parses the flags of `argv` (default: `sys.argv`) and runs `main`; always ends in `SystemExit`.

    A bad flag, or an `INPUT_ERRORS` error from `main`, ends the run with one line
    `<script>.py: error: <describe(error)>` on stderr and exit code 1, no traceback. The scripts
    read and check every input before they write anything (the examples before they create
    --output_dir), so such a run leaves the file system as it found it.
    """
    program = os.path.basename(main.__code__.co_filename)

    def fail(message: str) -> None:
        print(f"{program}: error: {message}", file=sys.stderr)
        sys.exit(1)

    def parse_flags(args: list[str]) -> list[str]:
        try:
            return flags.FLAGS(args)
        except flags.Error as e:
            fail(str(e))

    try:
        app.run(main, argv=argv, flags_parser=parse_flags)
    except INPUT_ERRORS as e:
        fail(describe(e))
