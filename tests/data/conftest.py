"""Fixtures for the data tests: the built-in corpus, a Google-format text file, generated data
and the original BERT feature spec (taken from the original `run_pretraining.py` source)."""

import ast
import importlib.util
import pathlib
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data import corpora
from keras_bert_lite.data.corpora import builtin_documents
from keras_bert_lite.data.pretraining.format import serialize_example
from keras_bert_lite.data.pretraining.writer import create_pretraining_data

SEQ_LENGTH = 128
MAX_PREDICTIONS = 20
# Documents of the built-in corpus written to the small Google-format text file.
FILE_DOCUMENTS = slice(100, 160)


def original_feature_spec(seq_length: int, max_predictions_per_seq: int) -> dict:
    """The `name_to_features` dict of the original run_pretraining.py input_fn, evaluated as written."""
    source = pathlib.Path(importlib.util.find_spec("bert").origin).with_name("run_pretraining.py")
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "name_to_features" for t in node.targets
        ):
            expression = compile(ast.Expression(node.value), str(source), "eval")
            scope = {
                "tf": tf.compat.v1,
                "max_seq_length": seq_length,
                "max_predictions_per_seq": max_predictions_per_seq,
            }
            return eval(expression, scope)  # noqa: S307 - the original's own spec expression
    raise AssertionError(f"name_to_features not found in {source}")


def parse_with_original_spec(files, seq_length=SEQ_LENGTH, max_predictions_per_seq=MAX_PREDICTIONS) -> dict:
    """All records of `files` (in file order) parsed with the original spec, as numpy arrays."""
    spec = original_feature_spec(seq_length, max_predictions_per_seq)
    records = list(tf.data.TFRecordDataset(list(files)).as_numpy_iterator())
    parsed = tf.io.parse_example(tf.constant(records), spec)
    return {name: value.numpy() for name, value in parsed.items()}


def write_google_format(documents, path) -> str:
    """Writes documents one sentence per line, a blank line between documents."""
    pathlib.Path(path).write_text("\n\n".join("\n".join(d) for d in documents) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def builtin_build():
    """Builds the built-in corpus from scratch: (documents, modules imported while building)."""
    corpora._builtin_documents.cache_clear()
    before = set(sys.modules)
    documents = builtin_documents()
    return documents, set(sys.modules) - before


@pytest.fixture(scope="session")
def documents(builtin_build):
    return builtin_build[0]


@pytest.fixture(scope="session")
def corpus_file(documents, tmp_path_factory) -> str:
    """A small real-text file in Google's format (60 stdlib documentation documents)."""
    return write_google_format(documents[FILE_DOCUMENTS], tmp_path_factory.mktemp("corpus") / "corpus.txt")


@pytest.fixture(scope="session")
def generated(documents, real_vocab_file, tmp_path_factory):
    """Pre-training data from the whole built-in corpus: (stats, files, parsed records)."""
    directory = tmp_path_factory.mktemp("generated")
    files = [str(directory / f"train-{i}.tfrecord") for i in range(3)]
    stats = create_pretraining_data(
        documents,
        real_vocab_file,
        files,
        max_seq_length=SEQ_LENGTH,
        max_predictions_per_seq=MAX_PREDICTIONS,
        dupe_factor=2,
        seed=7,
    )
    return stats, files, parse_with_original_spec(files)


@pytest.fixture(scope="session")
def small_generated(documents, real_vocab_file, tmp_path_factory):
    """A few hundred examples (80 documents, one pass) in three files: (stats, files, parsed records)."""
    directory = tmp_path_factory.mktemp("small")
    files = [str(directory / f"small-{i}.tfrecord") for i in range(3)]
    stats = create_pretraining_data(
        documents[200:280],
        real_vocab_file,
        files,
        max_seq_length=SEQ_LENGTH,
        max_predictions_per_seq=MAX_PREDICTIONS,
        dupe_factor=1,
        seed=8,
    )
    return stats, files, parse_with_original_spec(files)


def unmasked_ids(parsed: dict) -> np.ndarray:
    """input_ids with the masked positions' labels put back (the text before masking)."""
    ids = np.array(parsed["input_ids"])
    rows, slots = np.nonzero(np.asarray(parsed["masked_lm_weights"]) > 0)
    ids[rows, np.asarray(parsed["masked_lm_positions"])[rows, slots]] = np.asarray(parsed["masked_lm_ids"])[
        rows, slots
    ]
    return ids


@pytest.fixture(scope="session")
def special_ids(real_vocab_file) -> dict:
    """Ids of [PAD], [CLS], [SEP], [MASK] in the real vocabulary (line numbers of vocab.txt)."""
    tokens = pathlib.Path(real_vocab_file).read_text(encoding="utf-8").splitlines()
    return {token: tokens.index(token) for token in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")}


def write_records(path, records) -> str:
    """Writes serialized records (bytes) to a TFRecord file."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def example_record(seq=SEQ_LENGTH, max_pred=MAX_PREDICTIONS, **overrides) -> bytes:
    """A valid serialized pre-training record of the given shape, with `overrides` applied."""
    values = dict(
        input_ids=[101] + [7] * (seq - 2) + [102],
        input_mask=[1] * seq,
        segment_ids=[0] * seq,
        masked_lm_positions=[1] * max_pred,
        masked_lm_ids=[7] * max_pred,
        masked_lm_weights=[1.0] * max_pred,
        next_sentence_label=0,
    )
    values.update(overrides)
    return serialize_example(**values)


@pytest.fixture(scope="session")
def data_helpers():
    """Module-level helpers for the test modules (conftest modules are not importable)."""
    return SimpleNamespace(
        original_feature_spec=original_feature_spec,
        parse_with_original_spec=parse_with_original_spec,
        write_google_format=write_google_format,
        unmasked_ids=unmasked_ids,
        write_records=write_records,
        example_record=example_record,
        seq_length=SEQ_LENGTH,
        max_predictions=MAX_PREDICTIONS,
    )
