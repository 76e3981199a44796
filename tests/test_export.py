"""SavedModel export: raw strings in, task outputs out; served in a fresh process that imports
only tensorflow and tensorflow_text; the same numbers and answers as the in-memory model and
`predict_answers`; no optimizer state; bad inputs answered or refused clearly."""

import json
import pathlib
import subprocess
import sys

import keras
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

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]  # `exported` serves in a fresh process

SEQ_LENGTH = 32
TEXT_A = ["The cat sat on the mat.", "Prices rose sharply in Zürich!", ""]
TEXT_B = ["A cat was sitting.", "Costs went up.", "Nothing here"]
CAFE = "The café on Rue Lepic opened in 1895. Its owner, Émile Dubois, kept a ledger."
LONG = (
    "The Danube is the second-longest river in Europe, after the Volga. It flows through much of Central "
    "and Southeastern Europe, from the Black Forest into the Black Sea. Its drainage basin covers about "
    "801,000 square kilometres and reaches into nineteen countries. Vienna, Bratislava, Budapest and "
    "Belgrade stand on its banks."
)
# Short contexts (one window) and long ones (many windows of 32 tokens, 8 apart); a question longer
# than the 8 tokens kept; a context that is only punctuation.
QUESTIONS = ["Who owned the café?", "When did it open?", "Where is the café?", "Which river is longer?",
             "Into which sea does the river flow, and through how many countries does it pass on its way?", "Who?"]
CONTEXTS = [CAFE, CAFE, "日本 has many cafés (about 70,000).", LONG, LONG, "?!"]
QA_LAYOUT = dict(max_query_length=8, doc_stride=8, max_answer_length=5)
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


def _squad_answers(model, preprocessor, version_2=False, threshold=0.0, questions=QUESTIONS, contexts=CONTEXTS):
    """What evaluation answers: squad_features + the model + predict_answers, in the export's layout."""
    examples = [SquadExample(str(n), q, c, [], -1) for n, (q, c) in enumerate(zip(questions, contexts))]
    layout = dict(max_query_length=QA_LAYOUT["max_query_length"], doc_stride=QA_LAYOUT["doc_stride"])
    features = squad_features(examples, preprocessor.tokenizer, max_seq_length=SEQ_LENGTH, **layout)
    outputs = model(features.model_inputs(), training=False)  # one eager call: no predict function traced
    predictions = predict_answers(
        examples, features, outputs["start_logits"].numpy(), outputs["end_logits"].numpy(),
        max_answer_length=QA_LAYOUT["max_answer_length"], version_2_with_negative=version_2,
        null_score_diff_threshold=threshold,
    )
    return predictions, np.bincount(features.example_index)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, real_vocab_file):
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    root = tmp_path_factory.mktemp("export")
    preprocessor = BertPreprocessor(real_vocab_file, seq_length=SEQ_LENGTH)
    encoder = BertEncoder(BertConfig.preset("tiny", num_hidden_layers=1))
    models = {
        "classifier": BertClassifier(encoder, num_classes=3),
        "qa": BertSpanLabeler(encoder),
        "ner": BertTokenClassifier(encoder, num_classes=len(CONLL2003_TAGS)),
    }
    # Fitted, as users export: the model now reaches an optimizer with slot variables.
    models["classifier"].compile(optimizer=keras.optimizers.AdamW(1e-3),
                                 loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    models["classifier"].fit(preprocessor((tf.constant(TEXT_A), tf.constant(TEXT_B))), np.array([0, 1, 2]), verbose=0)
    encoder.compile(optimizer=keras.optimizers.AdamW(1e-3))  # an encoder compiled on its own
    encoder.optimizer.build(encoder.trainable_variables)
    # A SQuAD 2.0 threshold in the middle of the null odds, so that both kinds of answer occur.
    null_odds = _squad_answers(models["qa"], preprocessor, version_2=True)[0].null_odds
    threshold = float(np.median(list(null_odds.values())))
    export_saved_model(models["classifier"], preprocessor, root / "classifier", labels=LABELS, text_pair=True)
    export_saved_model(models["qa"], preprocessor, root / "qa", window_batch_size=3, **QA_LAYOUT)
    export_saved_model(models["qa"], preprocessor, root / "qa_v2", version_2_with_negative=True,
                       null_score_diff_threshold=threshold, **QA_LAYOUT)
    export_saved_model(models["ner"], preprocessor, root / "ner", labels=CONLL2003_TAGS)
    export_encoder(encoder, preprocessor, root / "encoder")
    requests = {
        "classifier": ["serving_default", {"text_a": TEXT_A, "text_b": TEXT_B}],
        "qa": ["serving_default", {"question": QUESTIONS, "context": CONTEXTS}],
        "qa_v2": ["serving_default", {"question": QUESTIONS, "context": CONTEXTS}],
        "ner": ["serving_default", {"text": SENTENCES}],
        "encoder": ["preprocess_pair", {"text_a": TEXT_A, "text_b": TEXT_B}],
    }
    (root / "requests.json").write_text(json.dumps(requests))
    subprocess.run([sys.executable, "-c", SERVE, str(root), str(root / "requests.json")], check=True, timeout=300)
    served = dict(np.load(root / "served.npz", allow_pickle=True))
    return root, preprocessor, encoder, models, served, threshold


@pytest.mark.slow
def test_classifier_serves_probabilities_and_labels(exported):
    _, preprocessor, _, models, served, _ = exported
    inputs = preprocessor((tf.constant(TEXT_A), tf.constant(TEXT_B)))
    # The served graph runs on the inputs cut to the longest pair; the model here on all seq_length.
    assert int(tf.reduce_max(tf.reduce_sum(inputs["input_mask"], axis=1))) < preprocessor.seq_length
    logits = models["classifier"](inputs, training=False)
    np.testing.assert_allclose(served["classifier/logits"], logits, atol=1e-5)
    np.testing.assert_allclose(served["classifier/probabilities"], tf.nn.softmax(logits), atol=1e-5)
    ids = np.argmax(logits, axis=-1)
    assert served["classifier/label_ids"].tolist() == ids.tolist()
    assert [x.decode() for x in served["classifier/labels"]] == [LABELS[i] for i in ids]


def test_softmax_classifier_serves_its_probabilities_once(tmp_path, exported):
    _, preprocessor, encoder, _, _, _ = exported
    model = BertClassifier(encoder, num_classes=3, activation="softmax")
    export_saved_model(model, preprocessor, tmp_path / "softmax", labels=LABELS)
    served = tf.saved_model.load(str(tmp_path / "softmax")).signatures["serving_default"](text=tf.constant(TEXT_A))
    assert "logits" not in served  # the model's outputs are probabilities; no softmax of them
    probabilities = model(preprocessor(tf.constant(TEXT_A)), training=False)
    np.testing.assert_allclose(served["probabilities"], probabilities, atol=1e-5)
    np.testing.assert_allclose(tf.reduce_sum(served["probabilities"], axis=-1), 1.0, atol=1e-5)
    assert served["label_ids"].numpy().tolist() == np.argmax(probabilities, axis=-1).tolist()


@pytest.mark.parametrize("name", ["qa", "qa_v2"])
def test_span_labeler_answers_as_evaluation_does(exported, name):
    """Served answers equal predict_answers on the same model: short and long contexts, v1.1 and v2.0."""
    _, preprocessor, _, models, served, threshold = exported
    version_2 = name == "qa_v2"
    expected, windows = _squad_answers(models["qa"], preprocessor, version_2, threshold)
    assert windows.max() >= 5 and windows.min() == 1
    texts = [x.decode() for x in served[f"{name}/answer_text"]]
    assert texts == [expected.answers[str(n)] for n in range(len(QUESTIONS))]
    if version_2:
        assert "" in texts and any(texts)
    for n, text in enumerate(texts):
        start, end = served[f"{name}/answer_start"][n], served[f"{name}/answer_end"][n]
        if text:  # character offsets into the original string
            assert CONTEXTS[n][start:end] == text
            best = expected.nbest[str(n)][0] if not version_2 else next(e for e in expected.nbest[str(n)] if e["text"])
            assert served[f"{name}/score"][n] == pytest.approx(best["start_logit"] + best["end_logit"], abs=1e-4)
        else:
            assert start == end == -1 and served[f"{name}/score"][n] == 0
    assert served[f"{name}/start_logits"].shape == (len(QUESTIONS), SEQ_LENGTH)


def test_tagger_serves_one_tag_per_whitespace_word(exported):
    _, preprocessor, _, models, served, _ = exported
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
    root, preprocessor, encoder, _, served, _ = exported
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


def _saved_values(export_dir) -> list[tuple[str, list[int]]]:
    """(name, shape) of every value in a SavedModel's variables checkpoint."""
    return [(n, s) for n, s in tf.train.list_variables(str(export_dir / "variables" / "variables"))
            if n != "_CHECKPOINTABLE_OBJECT_GRAPH"]


def test_exports_hold_the_model_variables_and_no_optimizer_state(exported):
    root, _, encoder, models, _, _ = exported
    for name, model in (("classifier", models["classifier"]), ("encoder", encoder)):
        assert len(model.optimizer.variables) > len(model.variables)  # Adam's slots exist
        saved = _saved_values(root / name)
        assert sorted(tuple(s) for _, s in saved) == sorted(tuple(v.shape) for v in model.variables)
        assert all(n.startswith("model_variables/") for n, _ in saved)


LONG_TEXT = " ".join([LONG] * 100)  # ~5,000 words


@pytest.mark.slow
def test_bad_inputs_are_answered_correctly(exported):
    """Empty batches, empty strings, very long strings, invalid UTF-8: correct outputs, no crash."""
    root, preprocessor, encoder, models, _, _ = exported
    invalid = b"The caf\xe9 \xff opened in 1895, on Rue Lepic."
    texts = tf.constant([b"", LONG_TEXT.encode(), invalid])

    classifier = tf.saved_model.load(str(root / "classifier")).signatures["serving_default"]
    served = classifier(text_a=texts, text_b=texts[::-1])
    np.testing.assert_allclose(served["logits"], models["classifier"](preprocessor((texts, texts[::-1]))), atol=1e-5)
    assert classifier(text_a=tf.constant([], tf.string), text_b=tf.constant([], tf.string))["labels"].shape == (0,)

    tagger = tf.saved_model.load(str(root / "ner")).signatures["serving_default"]
    served = tagger(text=texts)
    assert served["num_words"].numpy().tolist() == [0, len(LONG_TEXT.split()), 9]
    assert served["words"][2, 1].numpy() == b"caf\xe9"  # the words of the input, as given
    assert tagger(text=tf.constant([], tf.string))["tags"].shape == (0, 0)

    hub = tf.saved_model.load(str(root / "encoder")).signatures
    outputs = hub["serving_default"](text=texts)
    np.testing.assert_allclose(outputs["pooled_output"], encoder(preprocessor(texts))["pooled_output"], atol=1e-5)
    assert hub["serving_default"](text=tf.constant([], tf.string))["pooled_output"].shape == (0, 128)

    qa = tf.saved_model.load(str(root / "qa")).signatures["serving_default"]
    assert qa(question=tf.constant([], tf.string), context=tf.constant([], tf.string))["answer_text"].shape == (0,)
    questions = ["", "Which river? " * 50, "When did it open?", "When did it open?"]
    contexts = [b"", LONG_TEXT.encode(), invalid, LONG.encode()]
    served = qa(question=tf.constant(questions), context=tf.constant(contexts))
    assert served["answer_text"][0] == b"" and served["answer_start"][0] == -1
    # Invalid bytes are read as U+FFFD, as Python's decode(errors="replace") reads these.
    decoded = [c.decode("utf-8", "replace") for c in contexts]
    expected, windows = _squad_answers(models["qa"], preprocessor, questions=questions, contexts=decoded)
    assert windows[1] > 500
    for n in range(1, 4):
        text = served["answer_text"][n].numpy().decode("utf-8")
        assert text == expected.answers[str(n)] == decoded[n][served["answer_start"][n]:served["answer_end"][n]]


@pytest.mark.slow
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


def test_unsupported_models_and_bad_arguments(tmp_path, real_vocab_file):
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    preprocessor = BertPreprocessor(real_vocab_file, seq_length=16)
    encoder = BertEncoder(BertConfig.preset("tiny", num_hidden_layers=1))
    with pytest.raises(TypeError, match="use export_encoder"):
        export_saved_model(encoder, preprocessor, tmp_path / "x")
    with pytest.raises(ValueError, match="2 label names given for a model with 3 classes"):
        export_saved_model(BertClassifier(encoder, 3), preprocessor, tmp_path / "y", labels=["a", "b"])
    with pytest.raises(ValueError, match=r"max_seq_length \(16\) must exceed max_query_length \(64\)"):
        export_saved_model(BertSpanLabeler(encoder), preprocessor, tmp_path / "z")
    with pytest.raises(ValueError, match="window_batch_size must be positive, got 0"):
        export_saved_model(BertSpanLabeler(encoder), preprocessor, tmp_path / "w", max_query_length=4,
                           window_batch_size=0)

