"""Document sources: the built-in stdlib-docs corpus, Google-format text files, TFDS datasets."""

import re
import sys

import pytest
import tensorflow_datasets as tfds

from keras_bert_lite.data import corpora
from keras_bert_lite.data.corpora import builtin_documents, read_documents, tfds_documents


def test_builtin_corpus_size_and_shape(documents):
    sentences = [s for d in documents for s in d]
    assert len(documents) >= 100
    assert len(sentences) >= 2000
    assert sum(len(s.split()) for s in sentences) >= 150_000
    assert all(len(d) >= corpora.MIN_DOCUMENT_SENTENCES for d in documents)
    assert all(
        isinstance(s, str) and s == s.strip() and len(s.split()) >= corpora.MIN_SENTENCE_WORDS
        for s in sentences
    )


def test_builtin_corpus_is_clean_prose(documents):
    sentences = [s for d in documents for s in d]
    for marker in (r"``[^`']+``", r":\w+:`", r"^>>>", "\n", r"\*\*\*\*", "===="):
        assert not [s for s in sentences if re.search(marker, s)], marker
    # Mostly words, not code: letters dominate every sentence's characters.
    letters = sum(c.isalpha() for s in sentences for c in s)
    assert letters / sum(len(s) for s in sentences) > 0.7


def test_builtin_corpus_is_deterministic_and_a_fresh_copy(documents):
    again = builtin_documents()
    assert again == documents
    again[0].append("changed")
    assert builtin_documents() == documents


def test_builtin_corpus_imports_no_module(builtin_build):
    documents, new_modules = builtin_build
    assert documents
    # pydoc_data is the one module read by import; the sources are only parsed.
    unexpected = {m for m in new_modules if not m.startswith(("pydoc_data", "encodings."))}
    assert not unexpected, sorted(unexpected)


def test_read_documents_round_trip(documents, tmp_path, data_helpers):
    first = data_helpers.write_google_format(documents[:3], tmp_path / "a.txt")
    # Extra blank and whitespace-only lines are one separator; a file ends a document.
    (tmp_path / "b.txt").write_text(
        "\n \n" + "\n".join(documents[3]) + "\n\n\n\t\n" + "\n".join(documents[4])
    )
    second = str(tmp_path / "b.txt")
    assert read_documents(first) == documents[:3]
    assert read_documents([first, second]) == documents[:5]
    assert read_documents(f"{second},{first}") == documents[3:5] + documents[:3]
    assert read_documents(str(tmp_path / "*.txt")) == documents[:5]


def test_read_documents_non_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("First line.\nSecond line.\n\nCaf\u00e9 ol\u00e9.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.txt, line 4: not valid UTF-8 \(byte 0xe9 at column 4\)"):
        read_documents(str(path))


def test_read_documents_pattern_without_match(tmp_path):
    (tmp_path / "a.txt").write_text("One sentence.\n")
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        read_documents(f"{tmp_path / 'a.txt'},{tmp_path / 'nothing-here*.txt'}")
    with pytest.raises(ValueError, match="No input file pattern"):
        read_documents(" , ")


def test_tfds_documents_from_a_local_dataset(tmp_path, documents):
    # Paragraphs (blank-line separated) of real sentences; the middle example has no text.
    texts = ["\n\n".join(documents[0][:6]), "", "\n\n".join(documents[1])]

    class TinyStdlibDocs(tfds.core.GeneratorBasedBuilder):
        """A local text dataset in TFDS's own format (no download)."""

        VERSION = tfds.core.Version("1.0.0")
        # Not defined in a dataset package: there is no checksums file next to the code.
        code_path = None

        def _info(self):
            features = tfds.features.FeaturesDict({"body": tfds.features.Text(), "id": tfds.features.Text()})
            return tfds.core.DatasetInfo(builder=self, features=features)

        def _split_generators(self, dl_manager):
            return {"train": self._generate_examples()}

        def _generate_examples(self):
            for i, text in enumerate(texts):
                yield i, {"body": text, "id": str(i)}

    TinyStdlibDocs(data_dir=str(tmp_path)).download_and_prepare()
    result = tfds_documents(
        "tiny_stdlib_docs", split="train", text_key="body", data_dir=str(tmp_path), download=False
    )
    # One document per non-empty example (TFDS fixes the example order; compare as a set).
    expected = [documents[0][:6], documents[1]]
    assert sorted(result) == sorted(expected)
    with pytest.raises(KeyError, match="no feature 'text'"):
        tfds_documents("tiny_stdlib_docs", data_dir=str(tmp_path), download=False)


def test_package_docstrings_join_the_corpus_without_importing(tmp_path, monkeypatch, documents):
    package = tmp_path / "docpkg"
    (package / "_core").mkdir(parents=True)
    (package / "tests").mkdir()
    (package / "__init__.py").write_text(
        '"""Tools that count the apples in a basket.\n\nThe basket is read once. Each apple counts once.\n"""\n'
        "raise RuntimeError('imported')\n"
    )
    (package / "_core" / "impl.py").write_text(
        'def count(basket):\n    """Counts the apples in a basket.\n\n    Args:\n'
        '        basket: The basket whose apples are counted.\n\n    Returns:\n'
        '        The number of apples in the basket.\n    """\n'
    )
    (package / "tests" / "test_impl.py").write_text('"""Tests the counting of apples here.\n\nMore tests of it."""\n')
    (package / "impl_test.py").write_text('"""Tests the counting of apples there.\n\nMore tests of it."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with_package = builtin_documents(packages=("docpkg", "no_such_package_here"))
    assert "docpkg" not in sys.modules
    assert with_package[: len(documents)] == documents
    assert with_package[len(documents):] == [
        ["Tools that count the apples in a basket.", "The basket is read once.", "Each apple counts once."],
        # Google-style sections become their descriptions; test folders and files are left out.
        ["Counts the apples in a basket.", "The basket whose apples are counted.",
         "The number of apples in the basket."],
    ]


def test_builtin_corpus_modules_are_the_modules_it_reads(tmp_path, monkeypatch, documents):
    (tmp_path / "docpkg").mkdir()
    (tmp_path / "docpkg" / "__init__.py").write_text('"""Counts apples in a basket.\n\nEach apple counts once."""\n')
    (tmp_path / "single.py").write_text('"""Counts pears in a basket.\n\nEach pear counts once."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = corpora.builtin_corpus_modules(packages=("docpkg", "single", "no_such_package_here"))
    read = {source.split(".")[0] for source in corpora.builtin_document_sources() if not source.startswith("help:")}
    assert read <= modules and {"json", "email", "docpkg"} <= modules
    # Left out: test suites and demo programs, private and compiled modules, single files, missing packages.
    assert not {"idlelib", "turtledemo", "test", "_thread", "math", "single", "no_such_package_here"} & modules
    assert "docpkg" not in corpora.builtin_corpus_modules()


def test_deduplicate_sentences_keeps_first_occurrences():
    documents = [
        ["One sentence here.", "Two sentences here."],
        ["ONE   sentence here.", "Three sentences here.", "Four sentences here."],
        ["two sentences here.", "Five sentences here."],
    ]
    assert corpora.deduplicate_sentences(documents) == [
        ["One sentence here.", "Two sentences here."],
        ["Three sentences here.", "Four sentences here."],
    ]
    assert corpora.deduplicate_sentences(documents, min_sentences=1)[2] == ["Five sentences here."]
