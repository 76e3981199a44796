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
from keras_bert_lite.data.squad import tokenize_with_offsets
from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.span_labeler import BertSpanLabeler
from keras_bert_lite.models.token_classifier import BertTokenClassifier

_STRINGS = tf.TensorSpec([None], tf.string)


def _write(export_dir: str | os.PathLike, resources: dict, endpoints: dict) -> str:
    """Saves a module holding `resources` (tracked by name) with `endpoints` as signatures.

    Args:
        resources: {attribute name: Keras model or layer} whose variables are saved.
        endpoints: {signature name: (fn, input_signature)}; the argument names of `fn` become
            the signature's input names.
    """
    module = tf.Module()
    for name, resource in resources.items():
        setattr(module, name, resource)
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
    max_query_length: int = 64,
    max_answer_length: int = 30,
    version_2_with_negative: bool = False,
    null_score_diff_threshold: float = 0.0,
) -> str:
    """Exports a task model with a `serving_default` signature that takes raw strings.

    | model                 | inputs                        | outputs                                  |
    |-----------------------|-------------------------------|------------------------------------------|
    | `BertClassifier`      | `text` (or `text_a`, `text_b` | `logits` [B, C], `probabilities` [B, C], |
    |                       | with `text_pair=True`) [B]    | `label_ids` int32 [B], `labels` [B];     |
    |                       |                               | regression: `predictions` float32 [B]    |
    | `BertSpanLabeler`     | `question`, `context` [B]     | `answer_text` [B], `answer_start`,       |
    |                       |                               | `answer_end` (characters in context, end |
    |                       |                               | exclusive) int32 [B], `score` [B],       |
    |                       |                               | `start_logits`, `end_logits` [B, S]      |
    | `BertTokenClassifier` | `text` [B] (words split on    | `words` [B, W] (padded ""), `tags`       |
    |                       | whitespace)                   | [B, W] (padded ""), `tag_ids` int32      |
    |                       |                               | [B, W] (padded -1), `num_words` [B]      |

    Args:
        model: one of the task models above.
        preprocessor: the `BertPreprocessor` the model was trained with (its tokenizer and
            `seq_length` are used in the graph).
        export_dir: output folder.
        labels: class (or tag) names in id order; default "0", "1", ...
        text_pair: classifier takes two strings (sentence pairs).
        max_query_length: SQuAD question tokens kept (the context fills the rest; longer
            contexts are truncated, there is one window per question).
        max_answer_length: longest answer in tokens (30).
        version_2_with_negative: answer "" when the [CLS] null score beats the best span by
            more than `null_score_diff_threshold` (SQuAD 2.0 models).
        null_score_diff_threshold: see above.

    Returns:
        `export_dir`.
    """
    if isinstance(model, BertClassifier):
        endpoint = _classifier_endpoint(model, preprocessor, labels, text_pair)
    elif isinstance(model, BertSpanLabeler):
        endpoint = _span_endpoint(
            model, preprocessor, max_query_length, max_answer_length, version_2_with_negative,
            null_score_diff_threshold,
        )
    elif isinstance(model, BertTokenClassifier):
        endpoint = _tagger_endpoint(model, preprocessor, labels)
    else:
        raise TypeError(
            f"export_saved_model exports BertClassifier, BertSpanLabeler or BertTokenClassifier, got "
            f"{type(model).__name__}; use export_encoder for a BertEncoder."
        )
    return _write(export_dir, {"model": model, "preprocessor": preprocessor}, {"serving_default": endpoint})


def _label_table(labels: Sequence[str] | None, num_classes: int) -> tf.Tensor:
    labels = [str(i) for i in range(num_classes)] if labels is None else [str(x) for x in labels]
    if len(labels) != num_classes:
        raise ValueError(f"{len(labels)} label names given for a model with {num_classes} classes.")
    return tf.constant(labels, tf.string)


def _classifier_endpoint(model: BertClassifier, preprocessor, labels, text_pair: bool):
    names = None if model.num_classes == 1 else _label_table(labels, model.num_classes)

    def outputs(texts):
        logits = model(preprocessor(texts), training=False)
        if names is None:
            return {"predictions": logits[:, 0]}
        label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "logits": logits,
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_ids": label_ids,
            "labels": tf.gather(names, label_ids),
        }

    if text_pair:
        return (lambda text_a, text_b: outputs((text_a, text_b))), [_STRINGS, _STRINGS]
    return (lambda text: outputs(text)), [_STRINGS]


def _keep_first(ragged: tf.RaggedTensor, counts: tf.Tensor) -> tf.RaggedTensor:
    """The first `counts[b]` items of each row b."""
    keep = tf.ragged.range(ragged.row_lengths()) < tf.cast(counts, tf.int64)[:, None]
    return tf.ragged.boolean_mask(ragged, keep)


def _span_endpoint(model, preprocessor, max_query_length, max_answer_length, allow_null, threshold):
    tokenizer, packer = preprocessor.tokenizer, preprocessor.packer
    seq_length = packer.seq_length
    if seq_length < max_query_length + 4:
        raise ValueError(f"seq_length {seq_length} cannot hold a {max_query_length}-token question.")

    def serve(question, context):
        query = tokenizer(question)[:, :max_query_length]
        ids, starts, ends = tokenize_with_offsets(tokenizer, context)
        offset = tf.cast(query.row_lengths(), tf.int32) + 2  # [CLS] question [SEP]
        budget = tf.minimum(tf.cast(ids.row_lengths(), tf.int32), seq_length - 1 - offset)
        ids, starts, ends = (_keep_first(t, budget) for t in (ids, starts, ends))
        outputs = model(packer([query, ids]), training=False)
        start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]

        # Byte span in the context of the word at every packed position (-1 outside it).
        token = tf.range(seq_length)[None, :] - offset[:, None]
        in_context = (token >= 0) & (token < budget[:, None])
        token = tf.clip_by_value(token, 0, seq_length - 1)

        def at_positions(values):
            dense = values.to_tensor(-1, shape=[None, seq_length])
            return tf.where(in_context, tf.gather(dense, token, batch_dims=1), -1)

        byte_starts, byte_ends = at_positions(starts), at_positions(ends)
        i = tf.range(seq_length)[:, None]
        j = tf.range(seq_length)[None, :]
        valid = (
            in_context[:, :, None] & in_context[:, None, :]
            & ((j >= i) & (j - i < max_answer_length))[None]
        )
        scores = start_logits[:, :, None] + end_logits[:, None, :]
        scores = tf.where(valid, scores, tf.float32.min)
        best = tf.argmax(tf.reshape(scores, [-1, seq_length * seq_length]), axis=-1, output_type=tf.int32)
        start, end = best // seq_length, best % seq_length
        score = tf.reduce_max(scores, axis=[1, 2])
        found = tf.reduce_any(valid, axis=[1, 2])
        if allow_null:
            null_score = start_logits[:, 0] + end_logits[:, 0]
            found = found & (null_score - score <= threshold)
        byte_start = tf.gather(byte_starts, start, batch_dims=1)
        byte_end = tf.gather(byte_ends, end, batch_dims=1)
        byte_start = tf.cast(tf.where(found, byte_start, 0), tf.int32)
        byte_end = tf.cast(tf.where(found, byte_end, 0), tf.int32)
        text = tf.strings.substr(context, byte_start, byte_end - byte_start, unit="BYTE")

        def chars(num_bytes):
            return tf.strings.length(tf.strings.substr(context, tf.zeros_like(num_bytes), num_bytes, unit="BYTE"), unit="UTF8_CHAR")

        return {
            "answer_text": text,
            "answer_start": tf.where(found, chars(byte_start), -1),
            "answer_end": tf.where(found, chars(byte_end), -1),
            "score": tf.where(found, score, tf.zeros_like(score)),
            "start_logits": start_logits,
            "end_logits": end_logits,
        }

    return serve, [_STRINGS, _STRINGS]


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

    def encode(input_word_ids, input_mask, input_type_ids):
        outputs = encoder(
            {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids},
            training=False,
        )
        return {
            "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"],
            "encoder_outputs": tf.stack(outputs["encoder_outputs"], axis=0),
        }

    def serve(text):
        outputs = encoder(preprocessor(text), training=False)
        return {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"]}

    return _write(
        export_dir,
        {"encoder": encoder, "preprocessor": preprocessor},
        {
            "serving_default": (serve, [_STRINGS]),
            "preprocess": (lambda text: preprocessor(text), [_STRINGS]),
            "preprocess_pair": (lambda text_a, text_b: preprocessor((text_a, text_b)), [_STRINGS, _STRINGS]),
            "encode": (encode, [ids, ids, ids]),
        },
    )
