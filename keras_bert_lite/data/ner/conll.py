"""Reading CoNLL named-entity files: one `word ... tag` line per word, blank lines between sentences.

Example:

    >>> train = read_conll("eng.train", tags=CONLL2003_TAGS)
    >>> train[0].words, train[0].tags
    (['EU', 'rejects', 'German', 'call', ...], ['I-ORG', 'O', 'I-MISC', 'O', ...])
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence

from keras_bert_lite.config import read_bytes
from keras_bert_lite.data.bad_input import BadRecords

# Columns are separated by runs of spaces and tabs; other whitespace belongs to the word.
_COLUMN_SEPARATOR = re.compile(r"[ \t]+")

CONLL2003_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")


@dataclasses.dataclass
class TaggedSentence:
    """A sentence of words with one tag each; `line` is the file line of its first word."""

    words: list[str]
    tags: list[str]
    line: int = 0


def read_conll(
    path: str | os.PathLike,
    tags: Sequence[str] | None = CONLL2003_TAGS,
    tag_column: int = -1,
    on_error: str = "raise",
) -> list[TaggedSentence]:
    """Reads a CoNLL file: one `word ... tag` line per word, blank lines between sentences.

    Lines whose first column is `-DOCSTART-` end a sentence and are otherwise ignored. Columns
    are separated by spaces and tabs only (as in the original files and Hugging Face's loader),
    so a word may hold other whitespace, e.g. a no-break space, and stays one word. A UTF-8
    byte-order mark at the start of the file is ignored.

    Args:
        path: the file (local or any `tf.io.gfile` path).
        tags: the allowed tags (None accepts any).
        tag_column: column of the tag (-1: the last, as in CoNLL-2003's NER column).
        on_error: "raise" at the first bad line, or "skip" the sentence containing it with a
            logged warning. Bad lines: fewer than 2 columns, no such tag column, an unknown
            tag, text that is not UTF-8.

    Returns:
        The sentences, in file order.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file and line of a bad record (on_error="raise"), or a file
            without any sentence.
    """
    path, data = read_bytes(path, "CoNLL file")
    allowed = None if tags is None else set(tags)
    bad = BadRecords(path, on_error)
    sentences: list[TaggedSentence] = []
    current = TaggedSentence([], [])
    broken = False
    for line_number, raw in enumerate([*data.splitlines(), b""], start=1):  # a blank line ends the last sentence
        try:
            fields = _COLUMN_SEPARATOR.split(raw.decode("utf-8-sig" if line_number == 1 else "utf-8").strip(" \t"))
        except UnicodeDecodeError as e:
            bad(line_number, f"not valid UTF-8 ({e.reason} at byte {e.start}).")
            broken = True
            continue
        if fields == [""] or fields[0] == "-DOCSTART-":
            if current.words and not broken:
                sentences.append(current)
            current, broken = TaggedSentence([], [], line_number + 1), False
            continue
        problem = None
        if len(fields) < 2:
            problem = f"expected 'word ... tag' (at least 2 columns), found {len(fields)} column(s)."
        elif not -len(fields) <= tag_column < len(fields):
            problem = f"no tag column {tag_column} in a line of {len(fields)} columns."
        elif allowed is not None and fields[tag_column] not in allowed:
            problem = f"tag {fields[tag_column]!r} is not one of {sorted(allowed)}."
        if problem:
            bad(line_number, problem)
            broken = True
            continue
        if not current.words:
            current.line = line_number
        current.words.append(fields[0])
        current.tags.append(fields[tag_column])
    if not sentences:
        raise ValueError(f"{path}: no usable sentences ({len(bad.messages)} bad lines skipped).")
    return sentences

