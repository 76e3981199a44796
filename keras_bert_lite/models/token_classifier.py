"""`BertTokenClassifier`: one label per word piece (named-entity recognition, tagging)."""

from __future__ import annotations

import keras

from keras_bert_lite.layers import ClassificationHead
from keras_bert_lite.models.encoder import BertEncoder, encoder_inputs
from keras_bert_lite.models.task_model import EncoderTaskModel


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertTokenClassifier(EncoderTaskModel):
    """A `BertEncoder` with dropout and a dense layer on every position of the last layer.

    As in the paper's NER experiment, a word is labelled by the logits at its first word
    piece; the other pieces, [CLS], [SEP] and padding get sample weight 0 in training (see
    `keras_bert_lite.data.ner.ner_dataset`).

    Args:
        encoder: the (usually pre-trained) `BertEncoder`; its weights are shared, not copied.
        num_classes: number of tags.
        dropout_rate: dropout on the sequence output before the dense layer (training only).

    Inputs (a dict, each int32 [batch, seq]): `input_word_ids`, `input_mask`, `input_type_ids`.

    Output:
        float32 logits [batch, seq, num_classes]. Train with
        `SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")` on
        int labels [batch, seq] and sample weights [batch, seq].

    Attributes: `encoder`, `classifier` (the `ClassificationHead`), `num_classes`.

    Example:

        >>> tagger = BertTokenClassifier(BertEncoder(BertConfig.preset("tiny")), num_classes=9)
        >>> tagger.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        ...     from_logits=True, reduction="mean_with_sample_weight"))
        >>> tagger.fit(dataset)  # dataset yields (features, labels, sample_weights)
    """

    CONFIG_ARGS = ("num_classes", "dropout_rate")

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout_rate: float = 0.1, **kwargs):
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(
                f"BertTokenClassifier: num_classes must be a positive integer, got {num_classes!r}."
            )
        inputs = encoder_inputs()
        classifier = ClassificationHead(
            num_classes, dropout_rate, encoder.config.initializer_range, dtype=encoder.dtype_policy, name="classifier"
        )
        logits = classifier(encoder(inputs)["sequence_output"])
        kwargs.setdefault("name", "bert_token_classifier")
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.classifier = classifier
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
