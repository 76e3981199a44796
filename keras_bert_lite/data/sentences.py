"""Plain-text helpers for building corpora: docstring sections, reST markup, sentence splitting.

The sentence splitter is deliberately simple and predictable: a sentence ends at ".", "!" or
"?" (optionally followed by closing quotes or brackets) when whitespace and then an upper-case
letter, a digit or an opening quote/bracket follow, unless the word before the period is a
common abbreviation ("e.g.", "i.e.", "etc.", "vs.", ...) or a single letter (an initial).

Example:

    >>> split_sentences("BERT reads text, e.g. books. It learns! Does it? Yes.")
    ['BERT reads text, e.g. books.', 'It learns!', 'Does it?', 'Yes.']
    >>> clean_rest_markup("Use :func:`len` on ``x``, see `docs <https://x.org>`_.")
    'Use len on x, see docs.'
    >>> docstring_paragraphs("Adds.\n\nArgs:\n    x: The first term.\n    y: The second.")
    'Adds.\n\n\n\n    The first term.\n\n    The second.'
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

# Google- and NumPy-style docstring sections: headers ("Args:", "Returns", "Parameters" over a
# "----------" rule), NumPy parameter lines ("axis : int, optional") and the "name (type): "
# prefix of a Google-style entry, whose description is kept.
_SECTION_HEADER = re.compile(
    r"(?:args|arguments|parameters|other parameters|keyword args|keyword arguments|kwargs|returns?|"
    r"yields?|raises|attributes|properties|examples?|notes?|warnings?|see also|references|"
    r"call arguments|call args|input shape|output shape)\s*:?",
    re.IGNORECASE,
)
_RULE = re.compile(r"[-=~^]{3,}")
_NUMPY_PARAMETER = re.compile(r"\**[\w.]+(?:\s*,\s*\**[\w.]+)*\s+:\s+\S.*")
_GOOGLE_ENTRY = re.compile(r"(\s*)\**[\w.]+(?:\s*\([^)]*\))?:\s+(?=\S)")

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


def docstring_paragraphs(text: str) -> str:
    """Turns the sections of a Google- or NumPy-style docstring into plain paragraphs.

    Section headers, their underlines and NumPy parameter-type lines become paragraph breaks;
    each Google-style entry ("name: text", "name (type): text") becomes a paragraph of its
    description, at the entry's indentation. Other lines are kept as they are, so prose,
    code examples and tables can still be told apart afterwards.

    Args:
        text: a docstring, already dedented (as `inspect.cleandoc` or `ast.get_docstring` give).

    Returns:
        The text with blank lines between the paragraphs (str).
    """
    lines = []
    for line in text.split("\n"):
        stripped = line.strip()
        if any(pattern.fullmatch(stripped) for pattern in (_SECTION_HEADER, _RULE, _NUMPY_PARAMETER)):
            lines.append("")
            continue
        entry = _GOOGLE_ENTRY.match(line)
        if entry:
            lines += ["", entry.group(1) + line[entry.end():]]
        else:
            lines.append(line)
    return "\n".join(lines)


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
        last_word = candidate.split()[-1].lower().lstrip("\"'([")
        if candidate.endswith(".") and (last_word in ABBREVIATIONS or re.fullmatch(r"\w\.", last_word)):
            continue
        sentences.append(candidate.strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]
