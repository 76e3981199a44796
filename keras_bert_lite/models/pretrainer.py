"""`BertPretrainer`: the encoder with BERT's masked-LM and next-sentence heads and losses."""

from __future__ import annotations

import keras
from keras import ops

from keras_bert_lite.layers import MaskedLMHead, NextSentenceHead
from keras_bert_lite.models.encoder import INPUT_NAMES, BertEncoder, encoder_inputs
from keras_bert_lite.models.losses import pretraining_losses, replica_share
from keras_bert_lite.models.rebuild import EncoderTaskModel


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertPretrainer(EncoderTaskModel):
    """A `BertEncoder` with BERT's pre-training heads, trainable with `compile()` + `fit()`.

    Inputs (a dict): the encoder's three int32 [batch, seq] inputs plus
        masked_lm_positions: int32 [batch, P], positions whose tokens are predicted.

    Outputs (a dict):
        mlm_logits: float32 [batch, P, V], computed only at the masked positions, decoded with
            the encoder's word-embedding table (tied) plus an output bias.
        nsp_logits: float32 [batch, 2], over {IsNext = 0, NotNext = 1}.

    The encoder's last layer is computed only at [CLS] and the masked positions (the encoder's
    `output_positions`): the same outputs as the full encoder, with about (seq - P - 1) / seq of
    that layer's work skipped.

    Training data is `(features, labels)` with labels `masked_lm_ids` int32 [batch, P],
    `masked_lm_weights` float32 [batch, P] and `next_sentence_labels` int32 [batch, 1]. The loss is
    BERT's (see `pretraining_losses`), so `compile()` needs only an optimizer. Metrics:
    `mlm_loss`, `nsp_loss`, `mlm_accuracy` (weighted by `masked_lm_weights`), `nsp_accuracy`.

    Example:

        >>> pretrainer = BertPretrainer(BertEncoder(BertConfig.preset("tiny")))
        >>> pretrainer.compile(optimizer="adam")
        >>> pretrainer.fit(dataset, epochs=1)  # dataset yields (features, labels)
    """

    def __init__(self, encoder: BertEncoder, **kwargs):
        inputs = encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        config = encoder.config
        dtype = self.head_dtype(encoder, kwargs.pop("dtype", None))
        masked_lm = MaskedLMHead(
            encoder.embeddings,
            activation=config.hidden_act,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            dtype=dtype,
            name="masked_lm",
        )
        next_sentence = NextSentenceHead(config.initializer_range, dtype=dtype, name="next_sentence")
        hidden = encoder({name: inputs[name] for name in INPUT_NAMES}, output_positions=inputs["masked_lm_positions"])
        outputs = {
            "mlm_logits": masked_lm(hidden["sequence_output"]),
            "nsp_logits": next_sentence(hidden["pooled_output"]),
        }
        kwargs.setdefault("name", "bert_pretrainer")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.encoder = encoder
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.nsp_loss_tracker = keras.metrics.Mean(name="nsp_loss")
        self.mlm_accuracy = keras.metrics.SparseCategoricalAccuracy(name="mlm_accuracy")
        self.nsp_accuracy = keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        total, mlm_loss, nsp_loss = pretraining_losses(y, y_pred)
        self.mlm_loss_tracker.update_state(mlm_loss)
        self.nsp_loss_tracker.update_state(nsp_loss)
        return replica_share(total + sum(self.losses))  # plus any regularization losses

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        self.mlm_accuracy.update_state(
            y["masked_lm_ids"], y_pred["mlm_logits"], sample_weight=y["masked_lm_weights"]
        )
        self.nsp_accuracy.update_state(ops.reshape(y["next_sentence_labels"], (-1,)), y_pred["nsp_logits"])
        return self.get_metrics_result()
