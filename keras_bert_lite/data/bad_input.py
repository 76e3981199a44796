"""Reporting bad input: the bad records of task data files (raise at the first one, or skip and log
each), and TensorFlow's errors in our messages."""

from __future__ import annotations

import re

import tensorflow as tf
from absl import logging

ON_ERROR_CHOICES = ("raise", "skip")


class BadRecords:
    """Collects the bad records of one input file.

    Args:
        path: the file being read (named in every message).
        on_error: "raise" (a ValueError at the first bad record) or "skip" (log a warning,
            remember the message, go on).

    Example:

        >>> bad = BadRecords("train.tsv", on_error="skip")
        >>> bad(7, "label '3' is not one of ['0', '1']")
        >>> bad.messages
        ["train.tsv, line 7: label '3' is not one of ['0', '1']"]
    """

    def __init__(self, path: str, on_error: str = "raise"):
        if on_error not in ON_ERROR_CHOICES:
            raise ValueError(f"on_error must be one of {ON_ERROR_CHOICES}, got {on_error!r}.")
        self.path = str(path)
        self.on_error = on_error
        self.messages: list[str] = []

    def __call__(self, line: int | None, problem: str) -> None:
        """Reports `problem` at 1-based `line` (None when the file has no line for it)."""
        where = self.path if line is None else f"{self.path}, line {line}"
        message = f"{where}: {problem}"
        if self.on_error == "raise":
            raise ValueError(message)
        self.messages.append(message)
        logging.warning("Skipped bad record: %s", message)


def op_error_text(error: tf.errors.OpError) -> str:
    """A TensorFlow error's own message, without the function-node prefix and op suffix."""
    text = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", error.message)
    return re.sub(r"\s*\[Op:\w+\].*$", "", text, flags=re.DOTALL).strip()
