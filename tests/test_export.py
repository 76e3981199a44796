"""SavedModel export: raw strings in, task outputs out; served in a fresh process that imports
only tensorflow and tensorflow_text; the same numbers as the in-memory model."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.data.ner import (
    CONLL2003_TAGS,
    TaggedSentence,
    predicted_tags,
    tag_inputs,
    word_positions,
)
from keras_bert_lite.data.squad import SquadExample, predict_answers, squad_features
from keras_bert_lite.export import export_encoder, export_saved_model
from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.span_labeler import BertSpanLabeler
from keras_bert_lite.models.token_classifier import BertTokenClassifier

pytestmark = pytest.mark.slow

TEXT_A = ["The cat sat on the mat.", "Prices rose sharply in Zürich!", ""]
TEXT_B = ["A cat was sitting.", "Costs went up.", "Nothing here"]
QUESTIONS = ["Who owned the café?", "When did it open?", "Where is the café?"]
CONTEXTS = [
    "The café on Rue Lepic opened in 1895. Its owner, Émile Dubois, kept a ledger.",
    "The café on Rue Lepic opened in 1895. Its owner, Émile Dubois, kept a ledger.",
    "日本 has many cafés (about 70,000).",
]
SENTENCES = ["EU rejects German call to boycott British lamb .", "Peter Blackburn", "  spaced   out  "]
LABELS = ["negative", "neutral", "positive"]

# Runs in a fresh interpreter: only tensorflow and tensorflow_text, never keras_bert_lite.
SERVE = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops the graphs use)
root, requests = sys.argv[1], json.load(open(sys.argv[2]))
results = {}
for name, (signature, inputs) in requests.items():
    fn = tf.saved_model.load(f"{root}/{name}").signatures[signature]
    outputs = fn(**{k: tf.constant(v, tf.string) for k, v in inputs.items()})
    for key, value in outputs.items():
        results[f"{name}/{key}"] = value.numpy()
assert not any(m.startswith("keras_bert_lite") for m in sys.modules), "keras_bert_lite was imported"
np.savez(f"{root}/served.npz", **results)
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory, real_vocab_file):
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    root = tmp_path_factory.mktemp("export")
    preprocessor = BertPreprocessor(real_vocab_file, seq_length=32)
    encoder = BertEncoder(BertConfig.preset("tiny", num_hidden_layers=1))
    models = {
        "classifier": BertClassifier(encoder, num_classes=3),
        "qa": BertSpanLabeler(encoder),
        "ner": BertTokenClassifier(encoder, num_classes=len(CONLL2003_TAGS)),
    }
    export_saved_model(models["classifier"], preprocessor, root / "classifier", labels=LABELS, text_pair=True)
    export_saved_model(models["qa"], preprocessor, root / "qa", max_query_length=8, max_answer_length=5)
    export_saved_model(models["ner"], preprocessor, root / "ner", labels=CONLL2003_TAGS)
    export_encoder(encoder, preprocessor, root / "encoder")
    requests = {
        "classifier": ["serving_default", {"text_a": TEXT_A, "text_b": TEXT_B}],
        "qa": ["serving_default", {"question": QUESTIONS, "context": CONTEXTS}],
        "ner": ["serving_default", {"text": SENTENCES}],
        "encoder": ["preprocess_pair", {"text_a": TEXT_A, "text_b": TEXT_B}],
    }
    (root / "requests.json").write_text(json.dumps(requests))
    subprocess.run([sys.executable, "-c", SERVE, str(root), str(root / "requests.json")], check=True, timeout=300)
    served = dict(np.load(root / "served.npz", allow_pickle=True))
    return root, preprocessor, encoder, models, served


def test_classifier_serves_probabilities_and_labels(exported):
    _, preprocessor, _, models, served = exported
    logits = models["classifier"](preprocessor((tf.constant(TEXT_A), tf.constant(TEXT_B))), training=False)
    np.testing.assert_allclose(served["classifier/logits"], logits, atol=1e-5)
    np.testing.assert_allclose(served["classifier/probabilities"], tf.nn.softmax(logits), atol=1e-5)
    ids = np.argmax(logits, axis=-1)
    assert served["classifier/label_ids"].tolist() == ids.tolist()
    assert [x.decode() for x in served["classifier/labels"]] == [LABELS[i] for i in ids]


def test_span_labeler_serves_answer_text_from_the_original_context(exported, real_vocab_file):
    _, preprocessor, _, models, served = exported
    examples = [SquadExample(str(n), q, c, [], -1) for n, (q, c) in enumerate(zip(QUESTIONS, CONTEXTS))]
    features = squad_features(examples, preprocessor.tokenizer, max_seq_length=32, doc_stride=32, max_query_length=8)
    assert len(features) == len(examples)  # one window each, as in serving
    outputs = models["qa"](features.model_inputs(), training=False)
    np.testing.assert_allclose(served["qa/start_logits"], outputs["start_logits"], atol=1e-5)
    np.testing.assert_allclose(served["qa/end_logits"], outputs["end_logits"], atol=1e-5)
    # The in-graph span search agrees with the Python n-best search over the same logits.
    expected = predict_answers(examples, features, outputs["start_logits"], outputs["end_logits"],
                               n_best_size=32, max_answer_length=5).answers
    texts = [x.decode() for x in served["qa/answer_text"]]
    assert texts == [expected[str(n)] for n in range(len(examples))]
    for n, text in enumerate(texts):
        start, end = served["qa/answer_start"][n], served["qa/answer_end"][n]
        assert text and CONTEXTS[n][start:end] == text  # character offsets into the original string


def test_tagger_serves_one_tag_per_whitespace_word(exported):
    _, preprocessor, _, models, served = exported
    sentences = [TaggedSentence(s.split(), ["O"] * len(s.split())) for s in SENTENCES]
    positions = word_positions(sentences, preprocessor)
    words = tf.ragged.constant([s.words for s in sentences])
    features, _ = tag_inputs(words, preprocessor.tokenizer, preprocessor.packer)
    expected = predicted_tags(models["ner"](features, training=False), positions, CONLL2003_TAGS)
    assert served["ner/num_words"].tolist() == [len(s.words) for s in sentences]
    for n, sentence in enumerate(sentences):
        count = len(sentence.words)
        assert [w.decode() for w in served["ner/words"][n][:count]] == sentence.words
        assert [t.decode() for t in served["ner/tags"][n][:count]] == expected[n]
        assert all(t == b"" for t in served["ner/tags"][n][count:])
        assert served["ner/tag_ids"][n][count:].tolist() == [-1] * (served["ner/tags"].shape[1] - count)


def test_encoder_has_tf_hub_style_signatures(exported):
    root, preprocessor, encoder, _, served = exported
    expected = preprocessor((tf.constant(TEXT_A), tf.constant(TEXT_B)))
    for name, value in expected.items():
        np.testing.assert_array_equal(served[f"encoder/{name}"], value)
    loaded = tf.saved_model.load(str(root / "encoder"))
    assert set(loaded.signatures) == {"serving_default", "preprocess", "preprocess_pair", "encode"}
    encoded = loaded.signatures["encode"](**loaded.signatures["preprocess"](text=tf.constant(TEXT_A)))
    reference = encoder(preprocessor(tf.constant(TEXT_A)), training=False)
    np.testing.assert_allclose(encoded["pooled_output"], reference["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(encoded["encoder_outputs"][-1], reference["sequence_output"], atol=1e-5)
    assert encoded["encoder_outputs"].shape[0] == encoder.config.num_hidden_layers


def test_saved_model_cli_shows_the_serving_signature(exported):
    root = exported[0]
    cli = pathlib.Path(sys.executable).parent / "saved_model_cli"
    shown = subprocess.run(
        [str(cli), "show", "--dir", str(root / "classifier"), "--tag_set", "serve",
         "--signature_def", "serving_default"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout
    for name in ("text_a", "text_b", "probabilities", "label_ids", "labels", "logits", "DT_STRING"):
        assert name in shown


def test_unsupported_models_and_bad_labels(tmp_path, real_vocab_file):
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    preprocessor = BertPreprocessor(real_vocab_file, seq_length=16)
    encoder = BertEncoder(BertConfig.preset("tiny", num_hidden_layers=1))
    with pytest.raises(TypeError, match="use export_encoder"):
        export_saved_model(encoder, preprocessor, tmp_path / "x")
    with pytest.raises(ValueError, match="2 label names given for a model with 3 classes"):
        export_saved_model(BertClassifier(encoder, 3), preprocessor, tmp_path / "y", labels=["a", "b"])
    with pytest.raises(ValueError, match="cannot hold a 64-token question"):
        export_saved_model(BertSpanLabeler(encoder), preprocessor, tmp_path / "z")
