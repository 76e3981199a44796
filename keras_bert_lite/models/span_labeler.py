"""`BertSpanLabeler`: start and end logits for extractive question answering (SQuAD)."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers import SpanHead
from keras_bert_lite.models.encoder import BertEncoder, encoder_inputs
from keras_bert_lite.models.task_model import EncoderTaskModel


def span_loss(labels: dict, outputs: dict):
    """The paper's SQuAD loss: mean of the start and end cross-entropies.

    Args:
        labels: `start_positions`, `end_positions`, int [batch] (or [batch, 1]) token indices;
            0 ([CLS]) marks "no answer in this window".
        outputs: `start_logits`, `end_logits`, float32 [batch, seq].

    Returns:
        float32 scalar, (mean start nll + mean end nll) / 2.
    """
    losses = []
    for side in ("start", "end"):
        positions = ops.reshape(labels[f"{side}_positions"], (-1,))
        losses.append(
            ops.mean(
                keras.losses.sparse_categorical_crossentropy(
                    positions, outputs[f"{side}_logits"], from_logits=True
                )
            )
        )
    return (losses[0] + losses[1]) / 2.0


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertSpanLabeler(EncoderTaskModel):
    """A `BertEncoder` with BERT's span head: a start and an end logit per position.

    Args:
        encoder: the (usually pre-trained) `BertEncoder`; its weights are shared, not copied.

    Inputs (a dict, each int32 [batch, seq]): `input_word_ids`, `input_mask`, `input_type_ids`.

    Outputs (a dict): `start_logits`, `end_logits`, float32 [batch, seq].

    Training data is `(features, labels)` with labels `start_positions`, `end_positions` int32
    [batch]. The loss is the paper's (see `span_loss`), so `compile()` needs only an optimizer;
    metrics `start_accuracy` and `end_accuracy`.

    Attributes: `encoder`, `span_head`.

    Example:

        >>> qa = BertSpanLabeler(BertEncoder(BertConfig.preset("tiny")))
        >>> qa.compile(optimizer="adam")
        >>> qa.fit(dataset)  # see keras_bert_lite.data.squad.squad_dataset
    """

    def __init__(self, encoder: BertEncoder, **kwargs):
        inputs = encoder_inputs()
        span_head = SpanHead(encoder.config.initializer_range, dtype=encoder.dtype_policy, name="span_head")
        start_logits, end_logits = span_head(encoder(inputs)["sequence_output"])
        outputs = {"start_logits": start_logits, "end_logits": end_logits}
        kwargs.setdefault("name", "bert_span_labeler")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.encoder = encoder
        self.span_head = span_head
        self.start_accuracy = keras.metrics.SparseCategoricalAccuracy(name="start_accuracy")
        self.end_accuracy = keras.metrics.SparseCategoricalAccuracy(name="end_accuracy")

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = span_loss(y, y_pred)
        if self.losses:
            loss = loss + ops.sum(ops.stack(self.losses))
        # Keras sums gradients over replicas, so each replica contributes 1/num_replicas.
        context = tf.distribute.get_replica_context()
        return loss / (context.num_replicas_in_sync if context is not None else 1)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        for side, metric in (("start", self.start_accuracy), ("end", self.end_accuracy)):
            metric.update_state(ops.reshape(y[f"{side}_positions"], (-1,)), y_pred[f"{side}_logits"])
        return self.get_metrics_result()
