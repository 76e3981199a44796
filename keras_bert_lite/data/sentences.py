"""Plain-text helpers for building corpora: reST markup removal and sentence splitting.

The sentence splitter is deliberately simple and predictable: a sentence ends at ".", "!" or
"?" (optionally followed by closing quotes or brackets) when whitespace and then an upper-case
letter, a digit or an opening quote/bracket follow, unless the word before the period is a
common abbreviation ("e.g.", "i.e.", "etc.", "vs.", ...) or a single letter (an initial).

Example:

    >>> split_sentences("BERT reads text, e.g. books. It learns! Does it? Yes.")
    ['BERT reads text, e.g. books.', 'It learns!', 'Does it?', 'Yes.']
    >>> clean_rest_markup("Use :func:`len` on ``x``, see `docs <https://x.org>`_.")
    'Use len on x, see docs.'
"""

from __future__ import annotations

import re

# Words that end in a period without ending a sentence (compared lower-cased).
ABBREVIATIONS = frozenset(
    "e.g. i.e. etc. vs. cf. mr. mrs. ms. dr. no. al. approx. resp. fig. sec. ch. vol. ed. st. jr. sr.".split()
)

# A candidate boundary: terminal punctuation, optional closers, whitespace, then a likely
# sentence start. Group 1 is the text up to and including the punctuation and closers.
_BOUNDARY = re.compile(r"([.!?][\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")
_LAST_WORD = re.compile(r"(\S+)$")

# Inline reST / Sphinx markup, applied in order.
_REST_SUBSTITUTIONS = (
    (re.compile(r"``(.+?)``"), r"\1"),  # ``literal``
    (re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`([^`<]*?)\s*<[^`>]*>`"), r"\1"),  # :role:`title <t>`
    (re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`[~!]?([^`]*)`"), r"\1"),  # :role:`target`
    (re.compile(r"`([^`<]*?)\s*<[^`>]*>`_{1,2}"), r"\1"),  # `text <url>`_
    (re.compile(r"`([^`]+)`_{0,2}"), r"\1"),  # `text`_ or `text`
    (re.compile(r"\*\*(\S(?:.*?\S)?)\*\*"), r"\1"),  # **strong**
    (re.compile(r"(?<![\w*])\*(\S(?:[^*]*?\S)?)\*(?![\w*])"), r"\1"),  # *emphasis*
    (re.compile(r"\s*\[(?:\d+|#\w*|\*)\]_?"), ""),  # footnote references [1]_ / [3]
    (re.compile(r"::(\s|$)"), r":\1"),  # "text::" introducing a literal block
    (re.compile(r"\s+"), " "),
)


def clean_rest_markup(text: str) -> str:
    """Removes inline reStructuredText/Sphinx markup and collapses whitespace.

    Args:
        text: one paragraph of reST text (str).

    Returns:
        The paragraph as plain text on one line (str).
    """
    for pattern, replacement in _REST_SUBSTITUTIONS:
        text = pattern.sub(replacement, text)
    return text.strip()


def split_sentences(text: str) -> list[str]:
    """Splits one paragraph of plain text into sentences (see the module docstring).

    Args:
        text: the paragraph (str); internal newlines are treated as spaces.

    Returns:
        The non-empty sentences, stripped, in order (list of str).
    """
    text = " ".join(text.split())
    sentences = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        candidate = text[start : match.end(1)]
        last_word = _LAST_WORD.search(candidate).group(1).lower().lstrip("\"'([")
        if candidate.endswith(".") and (last_word in ABBREVIATIONS or re.fullmatch(r"\w\.", last_word)):
            continue
        sentences.append(candidate.strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]
