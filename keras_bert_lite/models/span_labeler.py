"""`BertSpanLabeler`: start and end logits for extractive question answering (SQuAD)."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.data.bad_input import BadRecords
from keras_bert_lite.data.squad.answering import AnswerOptions, answer_questions
from keras_bert_lite.data.squad.features import squad_dataset, squad_features
from keras_bert_lite.data.squad.reading import parse_question
from keras_bert_lite.layers import SpanHead
from keras_bert_lite.models.encoder import BertEncoder, encoder_inputs
from keras_bert_lite.models.losses import replica_share, span_loss
from keras_bert_lite.models.task_model import TextTaskModel
from keras_bert_lite.models.text_inputs import holds_no_examples, text_column
from keras_bert_lite.text.preprocessor import BertPreprocessor

_STRINGS = tf.TensorSpec([None], tf.string)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertSpanLabeler(TextTaskModel):
    """A `BertEncoder` with BERT's span head: a start and an end logit per position.

    Args:
        encoder: the (usually pre-trained) `BertEncoder`; its weights are shared, not copied.
        preprocessor: optional `BertPreprocessor` for raw strings (see `TextTaskModel`); its
            `seq_length` is the window length (384 in the paper's SQuAD runs).

    Inputs (a dict, each int32 [batch, seq]): `input_word_ids`, `input_mask`, `input_type_ids`
    (SQuAD windows: see `keras_bert_lite.data.squad.squad_features`).

    Outputs (a dict): `start_logits`, `end_logits`, float32 [batch, seq] (also from `predict`:
    the span scoring of `keras_bert_lite.data.squad.predict_answers` works on logits).

    Training data is `(features, labels)` with labels `start_positions`, `end_positions` int32
    [batch], or, with a preprocessor, `x=(questions, contexts)` lists of strings and `y` their
    answers `{"text", "answer_start"}` as in SQuAD files (see `text_batches`). The loss is the
    paper's (see `span_loss`), so `compile()` needs no loss. Metrics `start_accuracy` and
    `end_accuracy`.

    Attributes: `encoder`, `span_head`, `preprocessor`. The encoder's pooler, which the span head
    does not read, is not among the model's trainable weights (`UNREAD_ENCODER_LAYERS`).

    Example:

        >>> qa = BertSpanLabeler.from_checkpoint("uncased_L-12_H-768_A-12", seq_length=384)
        >>> qa.fit((["Who wrote it?"], ["It was written by Ann in 1990."]), [{"text": "Ann", "answer_start": 18}])
        >>> qa.predict_answers(["Who wrote it?"], ["It was written by Ann in 1990."])
        [{'answer': 'Ann', 'start': 18, 'end': 21, 'score': ...}]
    """

    UNREAD_ENCODER_LAYERS = ("pooler",)  # the span head reads `sequence_output`

    def __init__(self, encoder: BertEncoder, preprocessor: BertPreprocessor | None = None, **kwargs):
        inputs = encoder_inputs()
        span_head = SpanHead(encoder.config.initializer_range, dtype=self.head_dtype(encoder, kwargs.pop("dtype", None)),
                             name="span_head")
        start_logits, end_logits = span_head(encoder(inputs)["sequence_output"])
        outputs = {"start_logits": start_logits, "end_logits": end_logits}
        kwargs.setdefault("name", "bert_span_labeler")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.attach(encoder, preprocessor)
        self.span_head = span_head
        self.start_accuracy = keras.metrics.SparseCategoricalAccuracy(name="start_accuracy")
        self.end_accuracy = keras.metrics.SparseCategoricalAccuracy(name="end_accuracy")
        self._answer_functions = {}

    def text_batches(self, x, y=None, sample_weight=None, batch_size: int = 32, shuffle: bool = False):
        """`(questions, contexts)` strings and their answers as SQuAD-window batches.

        `x` is a pair of equally long lists of strings (questions, contexts); `y` holds one answer
        per question in SQuAD's form: `{"text": str, "answer_start": int}` (the character offset
        of the answer in its context), the `datasets` form with lists of those (the first answer
        is the label), or None / empty lists for a question without an answer (SQuAD 2.0). Windows
        follow the paper (`squad_features` with `window_layout`: doc stride 128 and questions cut
        to 64 tokens, or to half a shorter window).
        """
        if sample_weight is not None:
            raise ValueError(f"{self.name}: sample_weight is not supported for (question, context) text.")
        if isinstance(x, tf.data.Dataset) or y is None:
            raise TypeError(
                f"{self.name} trains and evaluates on (questions, contexts) lists with answers y, and answers "
                "strings with predict_answers(questions, contexts); for token-id windows use "
                "keras_bert_lite.data.squad.squad_features."
            )
        if not (isinstance(x, (tuple, list)) and len(x) == 2):
            raise ValueError(f"{self.name}: x must be (questions, contexts), two lists of strings.")
        questions, contexts = ([text.decode("utf-8") for text in text_column(column, name).numpy()]
                               for column, name in zip(x, ("questions", "contexts")))
        if not len(questions) == len(contexts) == len(y):
            raise ValueError(f"{self.name}: {len(questions)} questions, {len(contexts)} contexts and {len(y)} "
                             "answers; give one context and one answer (or None) per question.")
        bad = BadRecords(f"{self.name}: y", on_error="raise")  # SQuAD files' checks, naming the question
        examples = [parse_question(_question_entry(i, question, answer), context, True, bad)
                    for i, (question, context, answer) in enumerate(zip(questions, contexts, y))]
        preprocessor = self.require_preprocessor()
        features = squad_features(examples, preprocessor.tokenizer, preprocessor.seq_length,
                                  **window_layout(preprocessor.seq_length))
        return squad_dataset(features, batch_size, is_training=shuffle)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return replica_share(span_loss(y, y_pred) + sum(self.losses))  # plus any regularization losses

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        for side, metric in (("start", self.start_accuracy), ("end", self.end_accuracy)):
            metric.update_state(ops.reshape(y[f"{side}_positions"], (-1,)), y_pred[f"{side}_logits"])
        return self.get_metrics_result()

    def predict_answers(self, questions, contexts, *, batch_size: int = 32, **options) -> list[dict]:
        """The best answer span in each context, as SQuAD evaluation and the exported model find it.

        Long contexts are split into doc-stride windows, the model runs on all of them and the
        paper's span scoring picks the best span over them
        (`keras_bert_lite.data.squad.answer_questions`, traced once per set of options).

        Args:
            questions, contexts: a string each, or equally long lists of strings.
            batch_size: questions (and windows) per model call.
            **options: `max_query_length`, `doc_stride`, `n_best_size`, `max_answer_length`,
                `version_2_with_negative`, `null_score_diff_threshold`: the fields of
                `keras_bert_lite.data.squad.AnswerOptions` (the paper's defaults), except that
                `max_query_length` and `doc_stride` not given fit the preprocessor's
                `seq_length` (`window_layout`: the paper's 64 and 128 from a 384 window on).

        Returns:
            One dict per question (none for no questions): `answer` (the context's text, "" for no answer), `start` and
            `end` (character offsets in the context, end exclusive; -1 for no answer) and `score`
            (the span's start + end logit).

        Raises:
            ValueError: no preprocessor, texts that are not strings or lists of different lengths,
                or a `max_query_length` the windows cannot hold or a `doc_stride` < 1 (naming it).
        """
        preprocessor = self.require_preprocessor()
        if holds_no_examples(questions) and holds_no_examples(contexts):
            return []
        questions, contexts = text_column(questions, "questions"), text_column(contexts, "contexts")
        if questions.shape[0] != contexts.shape[0]:
            raise ValueError(f"{questions.shape[0]} questions but {contexts.shape[0]} contexts; give one context each.")
        seq_length = preprocessor.seq_length
        query_length = options.get("max_query_length")
        if query_length is not None and not 0 < query_length <= seq_length - 4:
            raise ValueError(f"{self.name}.predict_answers: max_query_length={query_length}, but windows of the "
                             f"preprocessor's seq_length {seq_length} hold [CLS], the question, [SEP], some "
                             f"context and [SEP]: max_query_length must be in [1, {seq_length - 4}].")
        options = AnswerOptions(window_batch_size=batch_size, **{**window_layout(seq_length), **options})
        options.check(seq_length)
        if options not in self._answer_functions:
            self._answer_functions[options] = tf.function(
                lambda q, c: answer_questions(self, preprocessor.tokenizer, preprocessor.packer, q, c, options),
                input_signature=[_STRINGS, _STRINGS], autograph=False,
            )
        answer = self._answer_functions[options]
        results = []
        for start in range(0, int(questions.shape[0]), batch_size):
            found = answer(questions[start : start + batch_size], contexts[start : start + batch_size])
            results += [
                {"answer": text.decode("utf-8"), "start": int(begin), "end": int(end), "score": float(score)}
                for text, begin, end, score in zip(found["answer_text"].numpy(), found["answer_start"].numpy(),
                                                   found["answer_end"].numpy(), found["score"].numpy())
            ]
        return results


def window_layout(seq_length: int) -> dict[str, int]:
    """The paper's SQuAD windows fitted to `seq_length`: `max_query_length` 64 and `doc_stride`
    128, or half a shorter window (and room for [CLS], two [SEP] and one context token)."""
    half = max(1, min(seq_length // 2, seq_length - 4))
    return {"max_query_length": min(64, half), "doc_stride": min(128, half)}


def _question_entry(index: int, question: str, answer) -> dict:
    """The `index`-th question and its answer as a SQuAD `qas` entry, for `parse_question` to check."""
    texts, starts = (answer.get("text"), answer.get("answer_start")) if isinstance(answer, dict) else (0, 0)
    if answer is None:
        answers = []
    elif isinstance(texts, (list, tuple)) and isinstance(starts, (list, tuple)) and len(texts) == len(starts):
        # the `datasets` form: {"text": [...], "answer_start": [...]}
        answers = [{"text": text, "answer_start": start} for text, start in zip(texts, starts)]
    else:
        answers = [answer]
    return {"id": f"x[{index}]", "question": question, "answers": answers, "is_impossible": not answers}
