"""Fixtures for the text tests: real sentences, edge cases and the original BERT code as reference."""

import ast
import importlib
import importlib.util
import pathlib
import pydoc_data.topics

import pytest
import tensorflow as tf
from absl import flags

# Modules whose docstrings join `pydoc_data.topics` as real English text.
_DOC_MODULES = (
    "argparse", "asyncio", "collections", "csv", "dataclasses", "datetime", "decimal", "email",
    "functools", "heapq", "http.client", "inspect", "itertools", "json", "logging", "os", "pathlib",
    "pickle", "re", "shutil", "statistics", "string", "subprocess", "tarfile", "textwrap", "typing",
    "unittest", "urllib.request", "zipfile",
)

# Hand-picked inputs that exercise every normalisation and splitting rule.
EDGE_CASES = (
    "café naïve Ångström résumé Über",
    "中文字符 日本語のテキスト 한국어",
    "Hello!!! ...?!? --- (a)[b]{c} \"quoted\" 'single' $5 + 3 = 8 ^ ~ | ` < >",
    "a" * 100,
    "a" * 101,
    "word " + "ab" * 75 + " end",
    "b" * 201,
    "é" * 60 + " " + "б" * 120,
    "",
    "   ",
    "\t\n\r  \u3000\u00a0",
    "tab\tnew\nline\rcarriage",
    "ctrl\x00nul\x01soh\x7fdel\x85nel\u200bzwsp\u200dzwj\ufeffbom\u00adshy end",
    "replacement \ufffd char",
    "emoji 😀 🎉 👍🏽 ❤️ 🇩🇪",
    "ß Straße İstanbul ﬁ ﬀ ẞ Ǆ ΟΔΥΣΣΕΥΣ ΣΑΣ",
    "Ａｂｃ full-width ＡＢＣ ｶﾀｶﾅ",
    "¿Qué? ¡Sí! «guillemets» „Anführung“ ‘curly’ “double” … — –",
    "A\u0301 e\u0300 o\u0308 decomposed accents",
    "क्षत्रिय हिन्दी ภาษาไทย العربية עברית",
    "x²+y³ ½ ¼ ℃ № ™ ©",
    "line\u2028separator\u2029paragraph",
    "don't won't it's O'Reilly e.g. i.e. U.S.A.",
    "http://example.com/path?query=1&x=2#frag user@example.com",
    "3.14159 1,000,000 10^6 -42 +7",
    "snake_case camelCase kebab-case ALLCAPS",
)


@pytest.fixture(scope="session")
def edge_cases() -> list[str]:
    return list(EDGE_CASES)


@pytest.fixture(scope="session")
def real_sentences() -> list[str]:
    """Over 9,000 non-empty lines of the standard library's own documentation."""
    texts = list(pydoc_data.topics.topics.values())
    texts += [importlib.import_module(name).__doc__ or "" for name in _DOC_MODULES]
    lines = [line.strip() for text in texts for line in text.splitlines()]
    return [line for line in lines if line]


@pytest.fixture(scope="session")
def original_tokenization():
    """The original `bert.tokenization` module (its absl flag marked parsed, default values)."""
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    return importlib.import_module("bert.tokenization")


@pytest.fixture(scope="session")
def original_classifier():
    """`convert_single_example` and its helpers from the original `run_classifier.py`.

    The module itself cannot be imported (its `modeling` import needs `tf.contrib`), so the
    needed definitions are taken from its source and executed as written.
    """
    source = pathlib.Path(importlib.util.find_spec("bert").origin).with_name("run_classifier.py")
    wanted = {"InputExample", "InputFeatures", "PaddingInputExample", "convert_single_example",
              "_truncate_seq_pair"}
    tree = ast.parse(source.read_text(encoding="utf-8"))
    body = [node for node in tree.body if getattr(node, "name", None) in wanted]
    assert {node.name for node in body} == wanted, f"definitions missing from {source}"
    scope = {"tf": tf.compat.v1, "tokenization": importlib.import_module("bert.tokenization")}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(source), "exec"), scope)  # noqa: S102
    return scope


@pytest.fixture(scope="session")
def real_vocab(real_vocab_file) -> list[str]:
    with open(real_vocab_file, encoding="utf-8") as f:
        return [line.strip() for line in f]


@pytest.fixture(scope="session")
def small_vocab(real_vocab) -> list[str]:
    """The first 3,000 real tokens: special tokens, characters and frequent pieces (fast to build)."""
    return real_vocab[:3000]
