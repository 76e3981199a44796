"""The models' losses: BERT's pre-training losses and accuracies (`pretraining_statistics`, one
definition for `BertPretrainer.compute_loss` and `PretrainingLoop`), SQuAD's span loss, and a
replica's share of a loss.
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers.accelerated import sparse_softmax_cross_entropy

# Added to the MLM weight sum, as in the original BERT code: a batch without a real prediction
# gets an MLM loss of 0 rather than NaN.
MLM_EPSILON = 1e-5

# The keys of `pretraining_statistics`, in the order `PretrainingLoop` stacks them.
STATISTIC_NAMES = ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy")


def pretraining_statistics(
    labels: dict, outputs: dict, mlm_weight_total=None, num_examples_total=None
) -> dict[str, tf.Tensor]:
    """BERT's pre-training losses and accuracies of a batch, normalised by the given totals.

    With the default totals (this batch's own) these are the batch's statistics. Given the
    totals of a larger batch this one is part of (e.g. the global batch over all replicas and
    micro-batches), they are this part's share: the shares of all parts sum exactly to the
    statistics of the larger batch, whatever the split.

    Args:
        labels: `masked_lm_ids` int32 [b, P], `masked_lm_weights` float32 [b, P] (1 for a real
            prediction, 0 for padding), `next_sentence_labels` int32 [b, 1].
        outputs: `mlm_logits` float [b, P, V], `nsp_logits` float [b, 2] (computed in float32).
        mlm_weight_total: float32 scalar, the sum of `masked_lm_weights` to normalise the MLM
            loss and accuracy by; default: this batch's.
        num_examples_total: float32 scalar, the number of examples to normalise the NSP loss
            and accuracy by; default: this batch's.

    Returns:
        `STATISTIC_NAMES` -> float32 scalars, where
        mlm_loss = sum(weight * nll) / (mlm_weight_total + 1e-5),
        nsp_loss = sum(nll) / num_examples_total and loss = mlm_loss + nsp_loss, as in the
        original BERT code; mlm_accuracy = sum(weight * hit) / max(mlm_weight_total, 1e-5) and
        nsp_accuracy = sum(hit) / num_examples_total, as Keras' `SparseCategoricalAccuracy`.
    """
    weights = tf.cast(labels["masked_lm_weights"], tf.float32)
    mlm_ids = tf.cast(labels["masked_lm_ids"], tf.int32)
    mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)
    nsp_labels = tf.reshape(tf.cast(labels["next_sentence_labels"], tf.int32), [-1])
    nsp_logits = tf.cast(outputs["nsp_logits"], tf.float32)
    if mlm_weight_total is None:
        mlm_weight_total = tf.reduce_sum(weights)
    if num_examples_total is None:
        num_examples_total = tf.cast(tf.shape(nsp_labels)[0], tf.float32)
    mlm_nll = sparse_softmax_cross_entropy(mlm_logits, mlm_ids)
    nsp_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=nsp_labels, logits=nsp_logits)
    mlm_loss = tf.reduce_sum(weights * mlm_nll) / (mlm_weight_total + MLM_EPSILON)
    nsp_loss = tf.reduce_sum(nsp_nll) / num_examples_total
    mlm_hits = tf.cast(tf.equal(tf.argmax(mlm_logits, -1, output_type=tf.int32), mlm_ids), tf.float32)
    nsp_hits = tf.cast(tf.equal(tf.argmax(nsp_logits, -1, output_type=tf.int32), nsp_labels), tf.float32)
    return {
        "loss": mlm_loss + nsp_loss,
        "mlm_loss": mlm_loss,
        "nsp_loss": nsp_loss,
        "mlm_accuracy": tf.reduce_sum(weights * mlm_hits) / tf.maximum(mlm_weight_total, MLM_EPSILON),
        "nsp_accuracy": tf.reduce_sum(nsp_hits) / num_examples_total,
    }


def pretraining_losses(labels: dict, outputs: dict) -> tuple:
    """BERT's pre-training losses for one (local) batch, exactly as the original BERT code.

    Args:
        labels, outputs: as for `pretraining_statistics`.

    Returns:
        (total, mlm_loss, nsp_loss), float32 scalars (see `pretraining_statistics`).
    """
    statistics = pretraining_statistics(labels, outputs)
    return statistics["loss"], statistics["mlm_loss"], statistics["nsp_loss"]


def replica_share(loss: tf.Tensor) -> tf.Tensor:
    """`loss` divided by the number of replicas in sync (1 outside a `tf.distribute` replica).

    A `compute_loss` returns this: Keras sums the replicas' gradients, so each replica
    contributes 1/num_replicas of its local batch's loss to the global batch's mean.
    """
    context = tf.distribute.get_replica_context()
    replicas = context.num_replicas_in_sync if context is not None else 1
    return loss / replicas


def span_loss(labels: dict, outputs: dict):
    """The paper's SQuAD loss: mean of the start and end cross-entropies.

    Args:
        labels: `start_positions`, `end_positions`, int [batch] (or [batch, 1]) token indices;
            0 ([CLS]) marks "no answer in this window".
        outputs: `start_logits`, `end_logits`, float32 [batch, seq].

    Returns:
        float32 scalar, (mean start nll + mean end nll) / 2.
    """
    start, end = (
        keras.losses.sparse_categorical_crossentropy(
            ops.reshape(labels[f"{side}_positions"], (-1,)), outputs[f"{side}_logits"], from_logits=True
        )
        for side in ("start", "end")
    )
    return (ops.mean(start) + ops.mean(end)) / 2.0


def multiple_negatives_ranking_loss(anchors, positives, scale: float = 20.0):
    """sentence-transformers' `MultipleNegativesRankingLoss` (its default: anchor to positives):
    the cross-entropy of each anchor's scaled cosine similarities to every positive of the batch,
    its own pair's being the right answer and the others in-batch negatives.

    Args:
        anchors, positives: float [batch, D] embeddings; row i of each form a pair.
        scale: multiplies the cosine similarities (the inverse softmax temperature); 20 as there.

    Returns:
        float32 scalar, the mean over the anchors.
    """
    anchors, positives = (ops.normalize(ops.cast(x, "float32"), axis=-1, epsilon=1e-12) for x in (anchors, positives))
    logits = scale * ops.matmul(anchors, ops.transpose(positives))
    labels = ops.arange(ops.shape(logits)[0], dtype="int32")
    return ops.mean(keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True))
