"""SavedModels that take raw text: task models for serving, and TF Hub-style encoders.

Tokenization runs inside the graph, so the exported models need only `tensorflow` and
`tensorflow_text` (imported, for its ops) to load and run; keras_bert_lite is not needed.

Example:

    >>> export_saved_model(classifier, preprocessor, "export/sst2", labels=["negative", "positive"])
    >>> # elsewhere, with only tensorflow installed:
    >>> import tensorflow as tf, tensorflow_text  # noqa: F401 (registers the ops)
    >>> serve = tf.saved_model.load("export/sst2").signatures["serving_default"]
    >>> serve(text=tf.constant(["a gripping, funny film"]))["labels"]
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_bert_lite.data.ner import tag_inputs
from keras_bert_lite.data.squad.answering import AnswerOptions, answer_questions
from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.masked_lm import BertMaskedLM, mask_token_inputs
from keras_bert_lite.models.sentence_encoder import BertSentenceEncoder
from keras_bert_lite.models.span_labeler import BertSpanLabeler
from keras_bert_lite.models.token_classifier import BertTokenClassifier

_STRINGS = tf.TensorSpec([None], tf.string)


def _write(export_dir: str | os.PathLike, model: keras.Model, preprocessor, endpoints: dict) -> str:
    """Saves `endpoints` as the signatures of a SavedModel holding `model`'s variables.

    The saved module tracks the model's variables, not the model: a fitted model's `optimizer`
    (with Adam, slot variables twice the size of the weights) is reachable from the model and
    would be saved with it. Keras' `ExportArchive` leaves the optimizer out too, but saves each
    variable twice (as the Keras variable and as the TensorFlow variable the graph captures).

    Args:
        model: the Keras model the endpoints call.
        preprocessor: the `BertPreprocessor` the endpoints call.
        endpoints: {signature name: (fn, input_signature)}; the argument names of `fn` become
            the signature's input names.
    """
    module = tf.Module()
    module.model_variables = list(model.variables)
    module.preprocessor = preprocessor
    signatures = {}
    for name, (fn, input_signature) in endpoints.items():
        function = tf.function(fn, input_signature=input_signature, autograph=False)
        setattr(module, name, function)
        signatures[name] = function
    export_dir = os.fspath(export_dir)
    tf.saved_model.save(module, export_dir, signatures=signatures)
    return export_dir


def export_saved_model(
    model: keras.Model,
    preprocessor,
    export_dir: str | os.PathLike,
    labels: Sequence[str] | None = None,
    text_pair: bool = False,
    top_k: int = 5,
    **answer_options,
) -> str:
    """Exports a task model with a `serving_default` signature that takes raw strings.

    | model                 | inputs                        | outputs                                  |
    |-----------------------|-------------------------------|------------------------------------------|
    | `BertClassifier`      | `text` (or `text_a`, `text_b` | `logits` [B, C], `probabilities` [B, C], |
    |                       | with `text_pair=True`) [B]    | `label_ids` int32 [B], `labels` [B];     |
    |                       |                               | regression: `predictions` float32 [B];   |
    |                       |                               | no `logits` with activation="softmax"    |
    | `BertSpanLabeler`     | `question`, `context` [B]     | `answer_text` [B], `answer_start`,       |
    |                       |                               | `answer_end` (characters in context, end |
    |                       |                               | exclusive, -1 for no answer) int32 [B],  |
    |                       |                               | `score` [B], `start_logits`,             |
    |                       |                               | `end_logits` [B, S] (the answer's window)|
    | `BertTokenClassifier` | `text` [B] (words split on    | `words` [B, W] (padded ""), `tags`       |
    |                       | whitespace)                   | [B, W] (padded ""), `tag_ids` int32      |
    |                       |                               | [B, W] (padded -1), `num_words` [B]      |
    | `BertSentenceEncoder` | `text` [B]                    | `embeddings` float32 [B, D]              |
    | `BertMaskedLM`        | `text` [B] with `[MASK]`s     | `token_ids` int32 [B, M, top_k] (padded  |
    |                       |                               | -1), `tokens` [B, M, top_k] (padded ""), |
    |                       |                               | `scores` [B, M, top_k] (padded 0),       |
    |                       |                               | `num_masks` int32 [B]                    |

    A masked LM fills each `[MASK]` written in a text as its `fill_mask` does (M the batch's
    largest number of masks, most probable first); a text without one (or whose masks are all
    past `seq_length`) gets `num_masks` 0 and padding only.

    A span model answers as its `predict_answers` does (the same windows and span scoring). Only
    the model's variables are saved, never its optimizer's.

    Args:
        model: one of the task models above.
        preprocessor: the `BertPreprocessor` the model was trained with (its tokenizer and
            `seq_length` are used in the graph).
        export_dir: output folder.
        labels: class (or tag) names in id order; default "0", "1", ...
        text_pair: classifier takes two strings (sentence pairs).
        top_k: a masked LM's candidates per mask.
        **answer_options: a span model's answering (`max_query_length`, `doc_stride`, `n_best_size`,
            `max_answer_length`, `version_2_with_negative`, `null_score_diff_threshold`,
            `window_batch_size`): the fields of `keras_bert_lite.data.squad.AnswerOptions`.

    Returns:
        `export_dir`.

    Raises:
        TypeError: a model of another type.
        ValueError: label names that do not match the classes, or windows that cannot hold a
            `max_query_length`-token question.
    """
    answer_options = AnswerOptions(**answer_options)  # a TypeError names any unknown keyword argument
    if isinstance(model, BertClassifier):
        endpoint = _classifier_endpoint(model, preprocessor, labels, text_pair)
    elif isinstance(model, BertSpanLabeler):
        answer_options.check(preprocessor.seq_length)
        tokenizer, packer = preprocessor.tokenizer, preprocessor.packer
        endpoint = (lambda question, context: answer_questions(model, tokenizer, packer, question, context,
                                                               answer_options)), [_STRINGS, _STRINGS]
    elif isinstance(model, BertTokenClassifier):
        endpoint = _tagger_endpoint(model, preprocessor, labels)
    elif isinstance(model, BertSentenceEncoder):  # padding is pooled out: cut it as the classifier does
        endpoint = (lambda text: {"embeddings": model(_without_shared_padding(preprocessor(text)), training=False)},
                    [_STRINGS])
    elif isinstance(model, BertMaskedLM):
        endpoint = _fill_mask_endpoint(model, preprocessor, top_k)
    else:
        raise TypeError(
            f"export_saved_model exports BertClassifier, BertSpanLabeler, BertTokenClassifier, "
            f"BertSentenceEncoder or BertMaskedLM, got {type(model).__name__}; use export_encoder for a BertEncoder."
        )
    return _write(export_dir, model, preprocessor, {"serving_default": endpoint})


def _label_table(labels: Sequence[str] | None, num_classes: int) -> tf.Tensor:
    labels = [str(i) for i in range(num_classes)] if labels is None else [str(x) for x in labels]
    if len(labels) != num_classes:
        raise ValueError(f"{len(labels)} label names given for a model with {num_classes} classes.")
    return tf.constant(labels, tf.string)


def _classifier_endpoint(model: BertClassifier, preprocessor, labels, text_pair: bool):
    names = None if model.num_classes == 1 else _label_table(labels, model.num_classes)

    def outputs(texts):
        scores = model(_without_shared_padding(preprocessor(texts)), training=False)
        if names is None:
            return {"predictions": scores[:, 0]}
        label_ids = tf.argmax(scores, axis=-1, output_type=tf.int32)
        served = {"label_ids": label_ids, "labels": tf.gather(names, label_ids)}
        if model.activation == "softmax":  # the model's outputs are already probabilities
            return dict(served, probabilities=scores)
        return dict(served, logits=scores, probabilities=tf.nn.softmax(scores, axis=-1))

    if text_pair:
        return (lambda text_a, text_b: outputs((text_a, text_b))), [_STRINGS, _STRINGS]
    return (lambda text: outputs(text)), [_STRINGS]


def _without_shared_padding(inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The packed inputs [B, seq_length] cut to [B, L], L the longest row's length (with [CLS]/[SEP]).

    Padding is masked out of attention, so no output at a real token depends on it: a classifier
    gives the same logits (up to float rounding) on the shorter inputs, and a batch of short texts
    costs its own length instead of `seq_length` (a single short string, the usual online request,
    most of all).
    """
    length = tf.maximum(tf.reduce_max(tf.reduce_sum(inputs["input_mask"], axis=1)), 1)  # 1: an empty batch
    return {name: value[:, :length] for name, value in inputs.items()}


def _tagger_endpoint(model: BertTokenClassifier, preprocessor, labels):
    names = _label_table(labels, model.num_classes)

    def serve(text):
        words = tf.strings.split(text)
        features, positions = tag_inputs(words, preprocessor.tokenizer, preprocessor.packer)
        logits = model(features, training=False)
        dense_positions = positions.to_tensor(-1)
        tag_ids = tf.gather(
            tf.argmax(logits, axis=-1, output_type=tf.int32), tf.maximum(dense_positions, 0), batch_dims=1
        )
        is_word = tf.sequence_mask(words.row_lengths(), tf.shape(dense_positions)[1])
        # Words cut off by truncation are tagged "O" (id 0 is "O" in CoNLL tag sets).
        tag_ids = tf.where(dense_positions >= 0, tag_ids, 0)
        tag_ids = tf.where(is_word, tag_ids, -1)
        return {
            "words": words.to_tensor(""),
            "tags": tf.where(is_word, tf.gather(names, tf.maximum(tag_ids, 0)), ""),
            "tag_ids": tag_ids,
            "num_words": tf.cast(words.row_lengths(), tf.int32),
        }

    return serve, [_STRINGS]


def _fill_mask_endpoint(model: BertMaskedLM, preprocessor, top_k: int):
    vocab_size = preprocessor.tokenizer.vocab_size
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= vocab_size:
        raise ValueError(f"top_k must be an integer in [1, {vocab_size}], got {top_k!r}.")
    tokens = tf.constant(preprocessor.tokenizer.vocabulary, tf.string)

    def serve(text):
        features = mask_token_inputs(preprocessor, text)
        num_masks = features.pop("num_masks")
        probabilities = tf.nn.softmax(model(features, training=False), axis=-1)
        scores, token_ids = tf.math.top_k(probabilities[..., :vocab_size], k=top_k)  # ids the vocabulary has
        is_mask = tf.sequence_mask(num_masks, tf.shape(token_ids)[1])[:, :, tf.newaxis]
        return {
            "token_ids": tf.where(is_mask, token_ids, -1),
            "tokens": tf.where(is_mask, tf.gather(tokens, token_ids), ""),
            "scores": tf.where(is_mask, scores, 0.0),
            "num_masks": num_masks,
        }

    return serve, [_STRINGS]


def export_encoder(encoder: BertEncoder, preprocessor, export_dir: str | os.PathLike) -> str:
    """Exports an encoder in the TF Hub style: separate `preprocess` and `encode` signatures.

    Signatures:
        preprocess(text [B]) and preprocess_pair(text_a [B], text_b [B]) ->
            `input_word_ids`, `input_mask`, `input_type_ids` int32 [B, seq_length].
        encode(input_word_ids, input_mask, input_type_ids: int32 [B, S]) ->
            `sequence_output` [B, S, H], `pooled_output` [B, H], `encoder_outputs` [L, B, S, H].
        serving_default(text [B]) -> `sequence_output`, `pooled_output` (preprocess + encode).

    Returns:
        `export_dir`.
    """
    if not isinstance(encoder, BertEncoder):
        raise TypeError(f"export_encoder exports a BertEncoder, got {type(encoder).__name__}.")
    ids = tf.TensorSpec([None, None], tf.int32)

    def encode(input_word_ids, input_mask, input_type_ids):  # encoder_outputs is one [L, B, S, H] tensor
        inputs = dict(input_word_ids=input_word_ids, input_mask=input_mask, input_type_ids=input_type_ids)
        return encoder(inputs, training=False)

    def serve(text):
        outputs = encoder(preprocessor(text), training=False)
        return {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"]}

    return _write(
        export_dir,
        encoder,
        preprocessor,
        {
            "serving_default": (serve, [_STRINGS]),
            "preprocess": (lambda text: preprocessor(text), [_STRINGS]),
            "preprocess_pair": (lambda text_a, text_b: preprocessor((text_a, text_b)), [_STRINGS, _STRINGS]),
            "encode": (encode, [ids, ids, ids]),
        },
    )
