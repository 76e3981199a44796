"""Atomic file writes: a file (or a checkpoint's set of files) appears complete or not at all.

Every writer of outputs that a later run trusts (checkpoints, exported models, configs,
vocabularies, TFRecords, metrics) writes to a temporary name in the destination's folder and
renames it into place when complete, so a process killed at any moment leaves either the
previous file or the new one, never half of one. Paths may be local or any `tf.io.gfile`
filesystem (gs://, ...); on object stores a rename is a copy, which still only publishes
complete files.

Example:

    >>> with atomic_write("out/metrics.json") as (temporary,):
    ...     with open(temporary, "w") as f:
    ...         f.write("{}")
    >>> write_text_atomically("out/notes.txt", "done\\n")
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Sequence

import tensorflow as tf

# Temporary names start with this (after a dot, so they are hidden): `.{name}.partial-{random}`.
TEMPORARY_MARKER = ".partial-"


def temporary_path(path: str) -> str:
    """A fresh hidden temporary name in `path`'s folder: `{folder}/.{name}.partial-{random}`.

    The random part keeps concurrent writers (processes, threads) of the same path apart.
    """
    directory, name = os.path.split(os.fspath(path))
    return os.path.join(directory, f".{name}{TEMPORARY_MARKER}{uuid.uuid4().hex[:12]}")


@contextlib.contextmanager
def atomic_write(*paths: str | os.PathLike, suffixes: Sequence[str] = ()) -> Iterator[list[str]]:
    """Yields one temporary path per `paths`; publishes them all when the block succeeds.

    Write each output to its temporary path inside the `with` block. When the block ends
    without an exception the temporaries are renamed onto `paths`, in the order given (put the
    file that marks a set as complete last). On an exception every temporary is removed and no
    destination is created or replaced. Parent folders are created.

    Args:
        *paths: destination paths (local or `tf.io.gfile`), at least one.
        suffixes: for writers that take a prefix and write several files (a TensorFlow
            checkpoint: `.data-00000-of-00001`, then `.index`): each yielded temporary is then a
            prefix, and `temporary + suffix` is renamed onto `path + suffix` for every suffix,
            in order.

    Yields:
        The temporary paths (or prefixes), in the order of `paths`.

    Raises:
        ValueError: no path, or a destination that is an existing folder (it would be replaced
            by a file).
    """
    destinations = [os.fspath(p) for p in paths]
    if not destinations:
        raise ValueError("atomic_write needs at least one path.")
    suffixes = suffixes or ("",)
    for destination in destinations:
        for target in (destination + suffix for suffix in suffixes):
            if tf.io.gfile.isdir(target):
                raise ValueError(f"{target} is a folder; expected a file path to write.")
        directory = os.path.dirname(destination)
        if directory:
            tf.io.gfile.makedirs(directory)
    temporaries = [temporary_path(d) for d in destinations]
    try:
        yield temporaries
        for temporary, destination in zip(temporaries, destinations):
            for suffix in suffixes:
                tf.io.gfile.rename(temporary + suffix, destination + suffix, overwrite=True)
    finally:
        for leftover in (temporary + suffix for temporary in temporaries for suffix in suffixes):
            if tf.io.gfile.isdir(leftover):
                tf.io.gfile.rmtree(leftover)
            elif tf.io.gfile.exists(leftover):
                tf.io.gfile.remove(leftover)


def write_text_atomically(path: str | os.PathLike, text: str) -> str:
    """Writes `text` (UTF-8) to `path` atomically; returns `path`."""
    with atomic_write(path) as (temporary,), tf.io.gfile.GFile(temporary, "w") as f:
        f.write(text)
    return os.fspath(path)


def copy_atomically(source: str | os.PathLike, path: str | os.PathLike) -> str:
    """Copies `source` to `path` atomically (a no-op when they are the same file); returns `path`."""
    source, path = os.fspath(source), os.fspath(path)
    if os.path.abspath(source) != os.path.abspath(path):
        with atomic_write(path) as (temporary,):
            tf.io.gfile.copy(source, temporary, overwrite=True)
    return path
