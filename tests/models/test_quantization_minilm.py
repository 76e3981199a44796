"""int8 quantization on the real all-MiniLM-L6-v2 weights and real English sentences.

The sentences are Python's own documentation (no sentiment data set ships offline). The task is
provenance: was a sentence written for the language reference (`pydoc_data.topics`) or for a
standard-library docstring? Labels come from where each sentence was written, not from a rule on
its words; a fine-tuned MiniLM classifier gets most of them right, which leaves room to see what
quantization costs.
"""

import gc
import importlib
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_lite as kbl
from keras_bert_lite.data.sentences import clean_rest_markup, split_sentences

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("frozen_gc")]  # reference weights, a fine-tuning run

SEQ_LENGTH = 32
LIBRARY_MODULES = (
    "argparse", "asyncio", "base64", "bisect", "calendar", "collections", "concurrent.futures", "configparser",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "email.message", "enum",
    "fractions", "functools", "getopt", "gettext", "glob", "gzip", "hashlib", "heapq", "hmac", "html.parser",
    "http.client", "http.server", "imaplib", "inspect", "ipaddress", "json", "logging", "mailbox", "mimetypes",
    "numbers", "optparse", "pathlib", "pickle", "pprint", "queue", "random", "shlex", "shutil", "smtplib",
    "socketserver", "statistics", "string", "subprocess", "tarfile", "tempfile", "textwrap", "threading",
    "timeit", "tokenize", "trace", "typing", "unittest.case", "urllib.parse", "urllib.request", "uuid",
    "warnings", "weakref", "zipfile",
)


def _sentences(texts):
    found = []
    for text in texts:
        for sentence in split_sentences(clean_rest_markup(text or "")):
            words = sentence.split()
            if 6 <= len(words) <= 24 and sentence[0].isupper() and ">>>" not in sentence:
                found.append(" ".join(words))
    return list(dict.fromkeys(found))  # de-duplicated, in order


def _reference_sentences():
    from pydoc_data import topics

    return _sentences(topics.topics[name] for name in sorted(topics.topics))


def _library_sentences():
    texts = []
    for name in LIBRARY_MODULES:
        module = importlib.import_module(name)
        texts.append(module.__doc__)
        for attribute in sorted(vars(module)):
            value = getattr(module, attribute)
            if not attribute.startswith("_") and getattr(value, "__module__", None) == name:
                texts.append(getattr(value, "__doc__", None))
    return _sentences(texts)


@pytest.fixture(scope="module")
def task():
    """(train, test) lists of (sentence, label): 0 = language reference, 1 = library docstring; 1,200
    training sentences (600 of each source) and 400 test sentences, none in both sources or both lists."""
    rng = np.random.default_rng(0)
    reference, library = _reference_sentences(), _library_sentences()
    shared = set(reference) & set(library)
    reference = rng.permutation([s for s in reference if s not in shared])
    library = rng.permutation([s for s in library if s not in shared])
    picked = [(s, 0) for s in reference[:500]] + [(s, 1) for s in library[:500]]
    picked = [picked[i] for i in rng.permutation(len(picked))]
    more = [(s, 0) for s in reference[500:800]] + [(s, 1) for s in library[500:800]]
    more = [more[i] for i in np.random.default_rng(1).permutation(len(more))]
    return picked[:600] + more, picked[600:]


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    encoder, preprocessor = kbl.from_hf_checkpoint(minilm_dir, seq_length=SEQ_LENGTH)
    return encoder, preprocessor


def _quantized(model):
    # As the frozen_gc fixture does at the start of the test, again: the fine-tuning run left many
    # objects alive, which Keras' per-layer `gc.collect()` in `quantize` would scan once per layer.
    gc.collect()
    gc.freeze()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Layer LayerNormalization does not have a `quantize` method"
        model.quantize("int8")
    return model


def _mean_pooled(encoder, features):
    hidden = np.asarray(encoder(features, training=False)["sequence_output"], "float64")
    mask = np.asarray(features["input_mask"], "float64")[..., None]
    return (hidden * mask).sum(1) / mask.sum(1)


@pytest.mark.slow
def test_int8_minilm_embeddings_keep_their_direction(minilm, minilm_dir, task):
    encoder, preprocessor = minilm
    sentences = [s for s, _ in task[1][:128]]
    features = preprocessor(tf.constant(sentences))
    expected = _mean_pooled(encoder, features)
    quantized, _ = kbl.from_hf_checkpoint(minilm_dir, seq_length=SEQ_LENGTH)
    got = _mean_pooled(_quantized(quantized), features)
    assert quantized.transformer_layers[0].query.quantization_mode == "int8"
    cosine = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(expected, axis=1)
    print(f"int8 vs float32 mean-pooled cosine: min {cosine.min():.5f}, mean {cosine.mean():.5f}")
    assert cosine.min() >= 0.99, (cosine.min(), cosine.mean())


@pytest.mark.slow
def test_int8_fine_tuned_classifier_keeps_its_held_out_accuracy(minilm, task, tmp_path):
    encoder, preprocessor = minilm
    train, test = task
    keras.utils.set_random_seed(0)
    classifier = kbl.BertClassifier(encoder, num_classes=2)
    # One pass over 1,200 sentences at 2e-4 (37 steps) costs two passes over 600 and learns more:
    # float accuracy 0.8125-0.86, int8 within -0.005 of it, agreement >= 0.985 over seeds 0-4; three
    # passes over 600 at 1e-4 (56 steps) gave 0.810-0.8225 over seeds 0-2.
    batch, epochs = 32, 1
    steps = epochs * len(train) // batch
    classifier.compile(
        optimizer=kbl.create_optimizer(2e-4, steps, steps // 10),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    train_features = preprocessor(tf.constant([s for s, _ in train]))
    classifier.fit(train_features, np.array([y for _, y in train]), batch_size=batch, epochs=epochs, verbose=0)
    test_features = preprocessor(tf.constant([s for s, _ in test]))
    labels = np.array([y for _, y in test])

    def predictions(model):
        return np.argmax(model.predict(test_features, batch_size=100, verbose=0), -1)

    float_predictions = predictions(classifier)
    float_accuracy = np.mean(float_predictions == labels)
    classifier.save(tmp_path / "fine_tuned.keras")
    quantized = _quantized(keras.saving.load_model(tmp_path / "fine_tuned.keras"))
    int8_predictions = predictions(quantized)
    int8_accuracy = np.mean(int8_predictions == labels)
    print(f"held-out accuracy: float32 {float_accuracy:.4f}, int8 {int8_accuracy:.4f}; labels agree on "
          f"{np.mean(int8_predictions == float_predictions):.4f} of {len(labels)}")
    assert float_accuracy > 0.8, float_accuracy  # the task is learned, so the comparison means something
    assert int8_accuracy >= float_accuracy - 0.01, (float_accuracy, int8_accuracy)
    assert np.mean(int8_predictions == float_predictions) > 0.97
