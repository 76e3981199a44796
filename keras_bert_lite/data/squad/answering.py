"""Raw (question, context) strings to answer text inside the TensorFlow graph, as served.

The contexts are cut into the doc-stride windows of `squad_windows`, the span model runs on all
windows (a bounded number at a time, so a long context cannot exhaust memory), and `score_spans`
picks the best span over them: the same windows and scorer as `squad_features` and
`predict_answers`, so a served model answers exactly as it was evaluated.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from keras_bert_lite.data.squad.features import MODEL_INPUTS, check_window_arguments
from keras_bert_lite.data.squad.spans import score_spans
from keras_bert_lite.data.squad.windows import squad_windows


@dataclasses.dataclass(frozen=True)
class AnswerOptions:
    """How answers are found, with the paper's defaults.

    `BertSpanLabeler.predict_answers` and `export_saved_model` take these fields as keyword
    arguments.

    Attributes:
        max_query_length, doc_stride: window layout (see `squad_windows`).
        n_best_size, max_answer_length: candidate spans (see `score_spans`).
        version_2_with_negative: answer "" when the null score exceeds the best span's score by
            more than `null_score_diff_threshold` (SQuAD 2.0 models).
        null_score_diff_threshold: see above.
        window_batch_size: windows the model runs on at once (bounds the memory a long context takes).
    """

    max_query_length: int = 64
    doc_stride: int = 128
    n_best_size: int = 20
    max_answer_length: int = 30
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0
    window_batch_size: int = 32

    def check(self, seq_length: int) -> None:
        """Raises ValueError unless windows of `seq_length` tokens can hold a `max_query_length` question."""
        check_window_arguments(seq_length, self.doc_stride, self.max_query_length)
        if self.window_batch_size < 1:
            raise ValueError(f"window_batch_size must be positive, got {self.window_batch_size}.")


def answer_questions(
    model,
    tokenizer,
    packer,
    questions: tf.Tensor,
    contexts: tf.Tensor,
    options: AnswerOptions = AnswerOptions(),
) -> dict[str, tf.Tensor]:
    """The best answer span for each question in its context (graph ops; use inside `tf.function`).

    Args:
        model: a span model mapping the three int32 inputs [N, S] to `start_logits` and
            `end_logits` [N, S] (e.g. `BertSpanLabeler`).
        tokenizer, packer: the model's `BertTokenizer` and a `BertPackInputs` of its sequence length.
        questions, contexts: tf.string [B]. Bytes that are not valid UTF-8 in a context are read
            as U+FFFD (the answer text and offsets refer to the context read that way).
        options: the window layout, candidate spans and no-answer rule (`AnswerOptions`).

    Returns:
        `answer_text` tf.string [B] ("" for no answer); `answer_start`, `answer_end` int32 [B]
        (characters in the context, end exclusive; -1 for no answer); `score` float32 [B] (the
        span's start + end logit, 0 for no answer); `start_logits`, `end_logits` float32 [B, S],
        the logits of the window the answer comes from (for no answer: the window with the lowest
        null score).
    """
    contexts = tf.strings.unicode_transcode(contexts, "UTF-8", "UTF-8", errors="replace")
    layout = (options.max_query_length, options.doc_stride)
    windows = squad_windows(tokenizer, packer, questions, contexts, *layout)
    start_logits, end_logits = _span_logits(model, windows, options.window_batch_size, packer.seq_length)
    spans = score_spans(
        start_logits, end_logits, windows["token_starts"], windows["max_context"],
        windows["windows_per_example"], options.n_best_size, options.max_answer_length,
    )

    def best(name):
        """Each example's value for its best candidate (0 where it has none)."""
        return spans[name][:, :1].to_tensor(shape=[None, 1])[:, 0]

    found = spans["score"].row_lengths() > 0
    if options.version_2_with_negative:
        null_margin = spans["null_score"] - best("start_logit") - best("end_logit")
        found &= null_margin <= options.null_score_diff_threshold
    span_window = best("window")
    byte_start = tf.gather_nd(windows["token_starts"], tf.stack([span_window, best("start")], axis=1))
    byte_end = tf.gather_nd(windows["token_ends"], tf.stack([span_window, best("end")], axis=1))
    byte_start = tf.cast(tf.where(found, byte_start, 0), tf.int32)
    byte_end = tf.cast(tf.where(found, byte_end, 0), tf.int32)
    window = tf.where(found, span_window, tf.maximum(spans["null_window"], 0))

    def characters(num_bytes):
        prefix = tf.strings.substr(contexts, tf.zeros_like(num_bytes), num_bytes, unit="BYTE")
        return tf.strings.length(prefix, unit="UTF8_CHAR")

    return {
        "answer_text": tf.strings.substr(contexts, byte_start, byte_end - byte_start, unit="BYTE"),
        "answer_start": tf.where(found, characters(byte_start), -1),
        "answer_end": tf.where(found, characters(byte_end), -1),
        "score": tf.cast(tf.where(found, best("score"), 0.0), tf.float32),
        "start_logits": tf.gather(start_logits, window),
        "end_logits": tf.gather(end_logits, window),
    }


def _span_logits(model, windows: dict, window_batch_size: int, seq_length: int) -> tuple[tf.Tensor, tf.Tensor]:
    """float32 start and end logits [W, S] of all windows, at most `window_batch_size` per model call.

    Up to `window_batch_size` windows run in one call without padding (a single short question
    costs one window, not a batch); more are padded to a whole number of such calls. An empty
    request runs one padding window, as `map_fn` cannot stack zero results of unknown shape.
    """
    num_windows = tf.shape(windows["input_word_ids"])[0]
    batch_size = tf.maximum(tf.minimum(num_windows, window_batch_size), 1)
    num_batches = tf.maximum((num_windows + batch_size - 1) // batch_size, 1)
    padding = num_batches * batch_size - num_windows
    batches = {
        name: tf.reshape(tf.pad(windows[name], [[0, padding], [0, 0]]), [num_batches, batch_size, seq_length])
        for name in MODEL_INPUTS
    }

    def run(inputs):
        outputs = model(inputs, training=False)
        return tf.cast(outputs["start_logits"], tf.float32), tf.cast(outputs["end_logits"], tf.float32)

    logits_spec = tf.TensorSpec([None, seq_length], tf.float32)
    start_logits, end_logits = tf.map_fn(run, batches, fn_output_signature=(logits_spec, logits_spec))
    return (tf.reshape(start_logits, [-1, seq_length])[:num_windows],
            tf.reshape(end_logits, [-1, seq_length])[:num_windows])
