"""Sentence splitting and reST clean-up, checked as properties over the real stdlib docs."""

import pathlib
import re
from pydoc_data import topics

import pytest

from keras_bert_lite.data.sentences import (
    ABBREVIATIONS,
    clean_rest_markup,
    docstring_paragraphs,
    split_sentences,
)


@pytest.fixture(scope="module")
def paragraphs():
    """Real prose paragraphs: every blank-line separated block of the pydoc help topics."""
    blocks = [p for text in topics.topics.values() for p in text.split("\n\n")]
    return [" ".join(p.split()) for p in blocks if p.strip()]


def test_split_is_lossless(paragraphs):
    for paragraph in paragraphs:
        assert " ".join(split_sentences(paragraph)) == paragraph


def test_every_sentence_but_the_last_ends_with_terminal_punctuation(paragraphs):
    splits = 0
    for paragraph in paragraphs:
        sentences = split_sentences(paragraph)
        splits += len(sentences) - 1
        for sentence, following in zip(sentences, sentences[1:]):
            assert re.search(r"[.!?][\"')\]]*$", sentence), sentence
            assert re.match(r"[\"'(\[]?[A-Z0-9]", following), following
    assert splits > 1000  # the splitter does split real text


def test_no_split_after_abbreviation_or_initial(paragraphs):
    sentences = split_sentences(" ".join(paragraphs))
    assert any(word in " ".join(sentences).split() for word in ABBREVIATIONS)  # they do occur
    for sentence in sentences[:-1]:
        last_word = sentence.split()[-1].lower()
        assert last_word not in ABBREVIATIONS
        assert not re.fullmatch(r"\w\.", last_word)


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_blank_text_has_no_sentences(text):
    assert split_sentences(text) == []


def test_markup_removed_from_real_docstrings():
    import json
    import os

    docstrings = [json.__doc__, os.path.__doc__, re.__doc__]
    for docstring in docstrings:
        cleaned = clean_rest_markup(docstring)
        assert "``" not in cleaned and ":func:`" not in cleaned and "\n" not in cleaned
        # Markup removal only deletes characters: the words survive in order.
        words = re.findall(r"[A-Za-z]{4,}", docstring)
        assert re.findall(r"[A-Za-z]{4,}", cleaned) == words


def test_docstring_sections_become_paragraphs_of_descriptions():
    import ast

    import numpy

    source = pathlib.Path(numpy.__file__).parent / "_core" / "fromnumeric.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    numpy_style = next(ast.get_docstring(n) for n in tree.body if getattr(n, "name", None) == "sum")
    paragraphs = [" ".join(p.split()) for p in docstring_paragraphs(numpy_style).split("\n\n") if p.strip()]
    assert "Elements to sum." in paragraphs  # the description of "a : array_like"
    assert not [p for p in paragraphs if re.match(r"(a|axis) : ", p) or set(p) <= set("-")]
    assert not [p for p in paragraphs if p in ("Parameters", "Returns", "See Also", "Examples")]
    google_style = "Adds.\n\nArgs:\n    x: The first term.\n    y (int): The second\n        term.\n\nReturns:\n    The sum."
    assert [" ".join(p.split()) for p in docstring_paragraphs(google_style).split("\n\n") if p.strip()] == [
        "Adds.", "The first term.", "The second term.", "The sum."]
