"""Span labeler and token classifier on raw text: answers with character offsets from (question,
context) strings, entities with character offsets from text, word-list fine-tuning, and an unused
pooler left as it is, without a warning (checkpoints and `.keras` files keep it)."""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.data.ner.conll import CONLL2003_TAGS
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.masked_lm import BertMaskedLM
from keras_bert_lite.models.sentence_encoder import BertSentenceEncoder
from keras_bert_lite.models.span_labeler import BertSpanLabeler
from keras_bert_lite.models.token_classifier import BertTokenClassifier
from keras_bert_lite.text.preprocessor import BertPreprocessor

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "wrote", "it", "?", "was", "written", "by", "ann",
         "in", "1990", ".", "angela", "merkel", "visited", "paris", "the", "eu", "rejects", "call"]


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    keras.utils.set_random_seed(3)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=len(VOCAB), num_hidden_layers=1,
                                            max_position_embeddings=32))
    return encoder, BertPreprocessor(str(vocab), seq_length=24)


@pytest.mark.slow
def test_span_labeler_answers_strings_with_the_best_span_of_its_logits(parts):
    encoder, preprocessor = parts
    qa = BertSpanLabeler(encoder, preprocessor=preprocessor)
    question, context = "Who wrote it?", "It was written by Ann in 1990."
    (answer,) = qa.predict_answers([question], [context], max_query_length=8, doc_stride=8)
    assert answer["answer"] == context[answer["start"] : answer["end"]] and answer["answer"]
    # One window holds the whole context: the answer is the best span (at most 30 tokens) of the model's logits
    # over the context's tokens (type id 1, before the last [SEP]); tolerance 1e-4 for float32 sums.
    features = preprocessor((tf.constant([question]), tf.constant([context])))
    logits = qa(features, training=False)
    start, end = logits["start_logits"][0].numpy(), logits["end_logits"][0].numpy()
    context_tokens = np.flatnonzero(features["input_type_ids"][0].numpy() == 1)[:-1]
    best = max(start[i] + end[j] for i in context_tokens for j in context_tokens if i <= j < i + 30)
    np.testing.assert_allclose(answer["score"], best, atol=1e-4)
    assert qa.predict_answers("Who wrote it?", context, max_query_length=8, doc_stride=8) == [answer]
    with pytest.raises(ValueError, match="2 questions but 1 contexts"):
        qa.predict_answers([question, question], [context])


@pytest.mark.slow
@pytest.mark.parametrize("model_class", [BertSpanLabeler, BertTokenClassifier])
def test_heads_without_the_pooler_neither_train_nor_lose_it(parts, model_class):
    encoder, _ = parts
    model = model_class(encoder) if model_class is BertSpanLabeler else model_class(encoder, num_classes=3)
    assert {w.path for w in model.weights} >= {w.path for w in encoder.pooler.weights}  # still saved and loaded
    pooler = [w.numpy() for w in encoder.pooler.weights]
    assert encoder.pooler.trainable  # the shared encoder itself is unchanged
    pooler_paths = {w.path for w in encoder.pooler.weights}
    assert not pooler_paths & {w.path for w in model.trainable_weights + model.trainable_variables}
    assert pooler_paths <= {w.path for w in model.non_trainable_weights}
    ids = np.random.default_rng(0).integers(5, len(VOCAB), (4, 12)).astype("int32")
    x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    if model_class is BertSpanLabeler:
        y = {"start_positions": np.array([1, 2, 3, 4]), "end_positions": np.array([2, 3, 4, 5])}
    else:
        y = np.zeros_like(ids) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Gradients do not exist for variables ['pooler/...']"
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert int(model.optimizer.iterations) == 1  # the default AdamW took a step ...
    for before, after in zip(pooler, encoder.pooler.weights):
        np.testing.assert_array_equal(after.numpy(), before)  # ... and left the pooler as it was (no decay)


@pytest.mark.slow
@pytest.mark.parametrize("model_class", [BertMaskedLM, BertSentenceEncoder])
def test_text_models_without_the_pooler_fit_on_text_without_a_warning(parts, model_class):
    encoder, preprocessor = parts
    model = model_class(encoder, preprocessor=preprocessor)
    pooler_paths = {w.path for w in encoder.pooler.weights}
    assert not pooler_paths & {w.path for w in model.trainable_weights + model.trainable_variables}
    pooler = [w.numpy() for w in encoder.pooler.weights]
    texts = ["who wrote it ?", "ann was written in 1990 .", "angela merkel visited paris .", "the eu rejects call"]
    x = texts if model_class is BertMaskedLM else (texts, texts[::-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Gradients do not exist for variables ['pooler/...']"
        model.fit(x, batch_size=4, epochs=1, verbose=0)
    assert int(model.optimizer.iterations) == 1
    for before, after in zip(pooler, encoder.pooler.weights):
        np.testing.assert_array_equal(after.numpy(), before)


@pytest.mark.slow
def test_token_classifier_fits_word_lists_and_finds_entities_with_character_offsets(parts):
    encoder, preprocessor = parts
    tagger = BertTokenClassifier(encoder, num_classes=len(CONLL2003_TAGS), label_names=CONLL2003_TAGS,
                                 preprocessor=preprocessor)
    tagger.fit([["the", "EU", "rejects", "call"], "Angela Merkel visited Paris"],
               [["O", "I-ORG", "O", "O"], ["I-PER", "I-PER", "O", "I-LOC"]], batch_size=2, verbose=0)
    # A head that tags every word I-PER: by CoNLL's IOB1 rules, all words form one PER entity.
    kernel, bias = tagger.classifier.dense.get_weights()
    bias[:] = 0.0
    bias[CONLL2003_TAGS.index("I-PER")] = 100.0
    tagger.classifier.dense.set_weights([np.zeros_like(kernel), bias])
    text = "  Angela Merkel\tvisited Paris. "
    (entities,) = tagger.predict_entities([text])
    assert [(e["entity"], e["start"], e["end"], e["text"]) for e in entities] == [("PER", 2, 30, text[2:30])]
    assert entities[0]["score"] == pytest.approx(1.0)
    # The same head with a softmax output: probabilities from predict, the same entities.
    softmax = BertTokenClassifier(encoder, num_classes=len(CONLL2003_TAGS), label_names=CONLL2003_TAGS,
                                  preprocessor=preprocessor, activation="softmax")
    softmax.classifier.set_weights(tagger.classifier.get_weights())
    ids = preprocessor(tf.constant([text]))
    np.testing.assert_allclose(softmax.predict(ids, verbose=0), tf.nn.softmax(tagger.predict(ids, verbose=0)), atol=1e-6)
    assert softmax.predict_entities([text]) == [entities]
    with pytest.raises(ValueError, match=r"y\[0\] has 1 tags for the 2 words of x\[0\]"):
        tagger.fit(["Angela Merkel"], [["I-PER"]], verbose=0)


@pytest.mark.slow
def test_feature_extractor_predicts_on_strings_as_on_their_ids(parts):
    from keras_bert_lite.models.feature_extractor import BertFeatureExtractor

    encoder, preprocessor = parts
    extractor = BertFeatureExtractor(encoder, layer_indices=(-1,), preprocessor=preprocessor)
    texts = ["Who wrote it?", "Angela Merkel visited Paris."]
    features = extractor.predict(texts, verbose=0)
    assert features.shape == (2, 24, encoder.config.hidden_size)
    ids = preprocessor(tf.constant(texts))
    np.testing.assert_allclose(features, extractor.predict(ids, verbose=0), atol=1e-6)  # same graph, float32
    np.testing.assert_allclose(features, extractor(ids), atol=1e-6)
    assert extractor.predict([]).shape == (0, 24, encoder.config.hidden_size)  # an empty batch, as served


@pytest.mark.slow
def test_span_labeler_fits_question_context_strings_with_squad_answers(parts):
    encoder, preprocessor = parts
    keras.utils.set_random_seed(4)
    qa = BertSpanLabeler(BertEncoder.from_config(encoder.get_config()), preprocessor=preprocessor)
    questions = ["Who wrote it?", "Who visited Paris?"]
    contexts = ["It was written by Ann in 1990.", "Angela Merkel visited Paris."]
    answers = [{"text": "Ann", "answer_start": 18}, {"text": ["Angela Merkel"], "answer_start": [0]}]
    # The labels are the answers' first and last word pieces in the windows squad_features builds.
    (_, labels), = qa.text_batches((questions, contexts), answers, batch_size=2).take(1)
    windows = preprocessor((tf.constant(questions), tf.constant(contexts)))["input_word_ids"].numpy()
    vocab = {token: i for i, token in enumerate(VOCAB)}
    ends = ("start_positions", "end_positions")
    assert [windows[0][labels[end][0]] for end in ends] == [vocab["ann"]] * 2
    assert [windows[1][labels[end][1]] for end in ends] == [vocab["angela"], vocab["merkel"]]
    qa.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = qa.fit((questions, contexts), answers, batch_size=2, epochs=30, verbose=0).history
    assert history["start_accuracy"][-1] == 1.0 and history["end_accuracy"][-1] == 1.0
    found = qa.predict_answers(questions, contexts, max_query_length=8, doc_stride=8)
    assert [a["answer"] for a in found] == ["Ann", "Angela Merkel"]
    assert qa.evaluate((questions, contexts), answers, verbose=0, return_dict=True)["start_accuracy"] == 1.0
    with pytest.raises(ValueError, match=r"y: question 'x\[1\]': answer 'Paris' does not occur at character 3"):
        qa.fit((questions, contexts), [None, {"text": "Paris", "answer_start": 3}], verbose=0)
    with pytest.raises(TypeError, match="predict_answers"):
        qa.predict((questions, contexts))
