"""Document sources for pre-training: the built-in documentation corpus, text files, TFDS datasets.

Every source returns documents as `list[list[str]]`: a list of documents, each a list of
sentences, the input format of BERT's next-sentence-prediction pair generation.

Example:

    >>> documents = builtin_documents()
    >>> documents[0][0]
    'Assert statements are a convenient way to insert debugging assertions into a program:'
    >>> larger = deduplicate_sentences(builtin_documents(packages=DEPENDENCY_PACKAGES))
    >>> documents = read_documents("corpus/*.txt,extra.txt")  # one sentence per line
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import sys
import sysconfig
import tokenize
from collections.abc import Sequence

import tensorflow as tf
from absl import logging

from keras_bert_lite.data.sentences import clean_rest_markup, docstring_paragraphs, split_sentences

# Built-in corpus: sentences need at least this many words, documents this many sentences.
MIN_SENTENCE_WORDS = 3
MIN_DOCUMENT_SENTENCES = 2

# Import names of the packages keras_bert_lite is installed with (setup.py's install_requires):
# their docstrings are on every installation, so they extend the built-in corpus without a download.
DEPENDENCY_PACKAGES = (
    "absl", "keras", "numpy", "safetensors", "tensorflow", "tensorflow_datasets", "tensorflow_text", "tqdm",
)

# Folders left out of the built-in corpus (test suites and demo programs), in the standard
# library and inside packages; files named like tests are left out too.
_EXCLUDED_MODULES = frozenset(
    {"test", "tests", "testing", "testdata", "idle_test", "idlelib", "turtledemo", "this"}
)

_SENTENCE_END = (".", "!", "?", ":")


def builtin_documents(packages: Sequence[str] = ()) -> list[list[str]]:
    """Python's own documentation, and optionally installed packages' docstrings, as a corpus.

    Documents are the `pydoc_data.topics` help topics (sorted by topic name), then one document
    per pure-Python standard-library source file (sorted by module path) made of its module,
    public class and public function docstrings, then the same for every source file of each of
    `packages` (in the order given; packages that are not installed are skipped). Sources are
    read and parsed with `ast`, never imported, so building the corpus has no side effects.
    Google- and NumPy-style docstring sections become paragraphs of their descriptions
    (`docstring_paragraphs`); prose paragraphs are kept (code examples, tables, headings and
    code-like indented blocks are dropped), inline reST markup is removed, and paragraphs are
    split with `split_sentences`. Sentences shorter than `MIN_SENTENCE_WORDS` words and
    documents with fewer than `MIN_DOCUMENT_SENTENCES` sentences are dropped.

    The result is deterministic for a given installation. Packages repeat sentences (shared
    argument descriptions, docstrings copied between modules): pass the result through
    `deduplicate_sentences` before training on it.

    Args:
        packages: import names of installed packages to add, e.g. `DEPENDENCY_PACKAGES`
            (CPython 3.11 alone: about 470 documents and 220,000 words; with the dependencies of
            TensorFlow 2.21 and Keras 3.15, about 1,000,000 words once deduplicated).

    Returns:
        A new list of documents, each a non-empty list of sentences (str).

    Raises:
        RuntimeError: the installation ships neither `pydoc_data` nor the library's sources.
    """
    return [list(document) for _, document in _builtin_documents(tuple(packages))]


def builtin_document_sources(packages: Sequence[str] = ()) -> list[str]:
    """Where each document of `builtin_documents(packages)` comes from, in the same order.

    A help topic is `"help:<topic>"`; a source file is its dotted module name (`"json.decoder"`,
    `"numpy._core.fromnumeric"`): its first component is the package, or the standard-library
    module. Lets a held-out part of the corpus be labelled by source without a person.
    """
    return [source for source, _ in _builtin_documents(tuple(packages))]


def builtin_corpus_modules(packages: Sequence[str] = ()) -> frozenset[str]:
    """The top-level modules whose sources `builtin_documents(packages)` reads.

    The standard library's public pure-Python modules (test suites and demo programs such as
    `idlelib` and `turtledemo` are left out), and those of `packages` installed as a package
    folder (a single-file module such as `six` has none and is not read). Text from any other
    module is outside the corpus, which is what a transfer task kept out of pre-training needs.

    Returns:
        Import names (str), e.g. `"json"`, `"numpy"`.
    """
    return frozenset(_stdlib_modules()) | {p for p in packages if _package_folder(p) is not None}


def deduplicate_sentences(
    documents: Sequence[Sequence[str]], min_sentences: int = MIN_DOCUMENT_SENTENCES
) -> list[list[str]]:
    """Keeps only the first occurrence of every sentence, comparing them lower-cased.

    Repeated sentences (boilerplate argument descriptions, docstrings copied between packages)
    would be memorised rather than learned, and would leak between training and held-out
    documents. Documents left with fewer than `min_sentences` sentences are dropped.

    Args:
        documents: documents, each a list of sentences (str), in priority order.
        min_sentences: documents with fewer remaining sentences are dropped.

    Returns:
        A new list of documents, each a list of sentences (str), order kept.
    """
    seen: set[str] = set()
    kept_documents = []
    for document in documents:
        kept = []
        for sentence in document:
            key = " ".join(sentence.lower().split())
            if key not in seen:
                seen.add(key)
                kept.append(sentence)
        if len(kept) >= min_sentences:
            kept_documents.append(kept)
    return kept_documents


@functools.lru_cache(maxsize=2)
def _builtin_documents(packages: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(source, sentences) of every document; see `builtin_documents` and `builtin_document_sources`."""
    try:
        from pydoc_data import topics
    except ImportError:  # some minimal Python builds leave it out
        help_topics = {}
    else:
        help_topics = topics.topics
    sources = [f"help:{name}" for name in sorted(help_topics)]
    texts = [[help_topics[name]] for name in sorted(help_topics)]
    root = sysconfig.get_paths()["stdlib"]
    paths = [(root, path) for files in _stdlib_modules().values() for path in files]
    for package in packages:
        files = _package_source_files(package)
        paths += [(os.path.dirname(_package_folder(package)), path) for path in files]
    sources += [_module_name(top, path) for top, path in paths]
    texts += [_source_docstrings(path) for _, path in paths]
    documents = [(source, tuple(s for block in blocks for s in _prose_sentences(block)))
                 for source, blocks in zip(sources, texts)]
    documents = [(source, sentences) for source, sentences in documents
                 if len(sentences) >= MIN_DOCUMENT_SENTENCES]
    if not documents:
        raise RuntimeError(
            "This Python installation has neither pydoc_data nor standard-library sources "
            f"(looked in {sysconfig.get_paths()['stdlib']}); the built-in corpus is unavailable."
        )
    return tuple(documents)


def _stdlib_modules() -> dict[str, list[str]]:
    """The pure-Python standard-library modules the corpus reads: name -> source paths (packages
    walked), in sorted order of names and paths."""
    root = sysconfig.get_paths()["stdlib"]
    modules = {}
    for name in sorted(n for n in sys.stdlib_module_names - _EXCLUDED_MODULES if not n.startswith("_")):
        path = os.path.join(root, name)
        if os.path.isfile(path + ".py"):
            modules[name] = [path + ".py"]
        elif os.path.isfile(os.path.join(path, "__init__.py")):
            modules[name] = _python_files(path, skip_private=True)
    return modules


def _package_folder(name: str) -> str | None:
    """The folder of an installed package (found without importing it), or None."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return sorted(spec.submodule_search_locations)[0]


def _package_source_files(name: str) -> list[str]:
    """Paths of an installed package's Python sources (found without importing it), sorted."""
    folder = _package_folder(name)
    if folder is None:
        logging.info("Package %s is not installed; the built-in corpus goes without it.", name)
        return []
    # Private folders stay: NumPy, for one, documents its public functions in numpy/_core.
    return _python_files(folder, skip_private=False)


def _module_name(top: str, path: str) -> str:
    """The dotted module name of the source file `path` under the import root `top`."""
    parts = os.path.relpath(path, top)[: -len(".py")].split(os.sep)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _python_files(directory: str, skip_private: bool) -> list[str]:
    """The .py files under `directory` in sorted order, without test folders and test files."""
    paths = []
    for folder, subdirs, files in os.walk(directory):
        subdirs[:] = sorted(
            d for d in subdirs
            if d not in _EXCLUDED_MODULES and not d.startswith(("_", ".") if skip_private else ".")
        )
        paths += [
            os.path.join(folder, f) for f in sorted(files)
            if f.endswith(".py") and not f.startswith("test_") and not f.endswith(("_test.py", "conftest.py"))
        ]
    return paths


def _source_docstrings(path: str) -> list[str]:
    """Module, public class and public function docstrings of one source file, in source order,
    with their sections turned into paragraphs."""
    try:
        with tokenize.open(path) as f:
            tree = ast.parse(f.read(), filename=path)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    docstrings = []

    def visit(node: ast.AST) -> None:
        docstring = ast.get_docstring(node)
        if docstring:
            docstrings.append(docstring_paragraphs(docstring))
        for child in node.body:
            if isinstance(
                child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            ) and not child.name.startswith("_"):
                visit(child)

    visit(tree)
    return docstrings


def _prose_sentences(text: str) -> list[str]:
    """Sentences of the prose paragraphs of a reST-like text block."""
    sentences = []
    for paragraph in text.split("\n\n"):
        lines = [line for line in paragraph.split("\n") if line.strip()]
        if not lines or not _is_prose(lines):
            continue
        for sentence in split_sentences(clean_rest_markup(" ".join(lines))):
            if len(sentence.split()) >= MIN_SENTENCE_WORDS:
                sentences.append(sentence)
    return sentences


def _is_prose(lines: list[str]) -> bool:
    """Whether a paragraph is running text rather than code, a table or a heading.

    Prose lines are indented at least as much as the first (indented prose must start with an
    upper-case letter, which code rarely does), contain no code, table or grammar markers, and
    the paragraph ends with sentence punctuation.
    """
    indent = len(lines[0]) - len(lines[0].lstrip())
    if indent and not lines[0].lstrip()[:1].isupper():
        return False
    for line in lines:
        stripped = line.strip()
        if len(line) - len(line.lstrip()) < indent:
            return False
        if stripped.startswith((">>>", "...", "|", "+-", "+=", "$ ")) or "::=" in stripped:
            return False
        if not any(c.isalnum() for c in stripped):  # heading underline or rule
            return False
    return lines[-1].rstrip().rstrip("\"')]").endswith(_SENTENCE_END)


def expand_file_patterns(file_patterns: str | Sequence[str]) -> list[str]:
    """Files matched by comma-separated and/or listed glob patterns, sorted per pattern."""
    if isinstance(file_patterns, str):
        file_patterns = [file_patterns]
    patterns = [p.strip() for item in file_patterns for p in item.split(",") if p.strip()]
    if not patterns:
        raise ValueError("No input file pattern given.")
    files = []
    for pattern in patterns:
        matched = sorted(tf.io.gfile.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"Input pattern {pattern!r} matches no file.")
        files += matched
    return files


def read_documents(file_patterns: str | Sequence[str]) -> list[list[str]]:
    """Reads documents in Google's pre-training text format.

    Format: UTF-8 text, one sentence per line, a blank (or whitespace-only) line between
    documents; runs of blank lines are a single separator, and each file ends a document.

    Args:
        file_patterns: a glob pattern, a comma-separated list of them, or a list of them
            (local paths or any filesystem `tf.io.gfile` supports, e.g. `gs://`).

    Returns:
        The non-empty documents, in file order, each a list of stripped sentences (str).

    Raises:
        FileNotFoundError: a pattern matches no file.
        ValueError: a line is not valid UTF-8; the message names the file, the line number and
            the offending byte.
    """
    documents = []
    for path in expand_file_patterns(file_patterns):
        document: list[str] = []
        with tf.io.gfile.GFile(path, "rb") as f:
            for line_number, raw in enumerate(f, start=1):
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    raise ValueError(
                        f"{path}, line {line_number}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at column "
                        f"{e.start + 1}); convert the file to UTF-8."
                    ) from None
                if line:
                    document.append(line)
                elif document:
                    documents.append(document)
                    document = []
        if document:
            documents.append(document)
    logging.info("Read %d documents from %s.", len(documents), file_patterns)
    return documents


def tfds_documents(
    name: str,
    split: str = "train",
    text_key: str = "text",
    data_dir: str | None = None,
    download: bool = True,
) -> list[list[str]]:
    """Reads a TensorFlow Datasets text dataset; each example becomes one document.

    The example's text is split into paragraphs at blank lines and each paragraph into
    sentences with `split_sentences`. Examples without any sentence are skipped and counted in
    the log.

    Args:
        name: TFDS dataset name, optionally with config/version ("wikipedia/20230601.en").
        split: TFDS split spec ("train", "train[:1%]", ...).
        text_key: the feature holding the text (a `tfds.features.Text` or string feature).
        data_dir: TFDS data directory; None uses the TFDS default.
        download: whether TFDS may download and prepare the dataset if it is not there yet.

    Returns:
        The documents, in dataset order, each a non-empty list of sentences (str).

    Raises:
        KeyError: the dataset has no feature `text_key`.
    """
    import tensorflow_datasets as tfds

    dataset = tfds.load(name, split=split, data_dir=data_dir, download=download, shuffle_files=False)
    if text_key not in dataset.element_spec:
        raise KeyError(
            f"TFDS dataset {name!r} has no feature {text_key!r}; it has {sorted(dataset.element_spec)}."
        )
    documents, skipped = [], 0
    for text in tfds.as_numpy(dataset.map(lambda example: example[text_key])):
        sentences = [s for paragraph in text.decode("utf-8").split("\n\n") for s in split_sentences(paragraph)]
        if sentences:
            documents.append(sentences)
        else:
            skipped += 1
    logging.info(
        "Read %d documents from TFDS %s[%s], skipped %d without text.", len(documents), name, split, skipped
    )
    return documents

