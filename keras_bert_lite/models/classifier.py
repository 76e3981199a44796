"""`BertClassifier`: sentence and sentence-pair classification (or regression) on [CLS]."""

from __future__ import annotations

import keras

from keras_bert_lite.layers import ClassificationHead
from keras_bert_lite.models.encoder import BertEncoder, encoder_inputs
from keras_bert_lite.models.task_model import EncoderTaskModel


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertClassifier(EncoderTaskModel):
    """A `BertEncoder` with dropout and a dense layer on the pooled [CLS] output.

    The encoder's last layer is computed only at [CLS] (the encoder's `output_positions`): the
    same logits as with the full encoder, with most of that layer's work skipped.

    Args:
        encoder: the (usually pre-trained) `BertEncoder`; its weights are shared, not copied.
        num_classes: number of classes; 1 makes a regression model (e.g. STS-B similarity).
        dropout_rate: dropout on the pooled output before the dense layer (training only).

    Inputs (a dict, each int32 [batch, seq]): `input_word_ids`, `input_mask`, `input_type_ids`.

    Output:
        float32 logits [batch, num_classes] (for num_classes=1, the predicted value [batch, 1]).
        Train with `SparseCategoricalCrossentropy(from_logits=True)` on int labels in
        [0, num_classes), or `MeanSquaredError` for regression.

    Attributes: `encoder`, `classifier` (the `ClassificationHead`), `num_classes`.

    Example:

        >>> clf = BertClassifier(BertEncoder(BertConfig.preset("tiny")), num_classes=3)
        >>> clf.compile(optimizer="adam",
        ...             loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        >>> clf.fit(dataset, epochs=3)  # dataset yields (features, int labels [batch])
    """

    CONFIG_ARGS = ("num_classes", "dropout_rate")

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout_rate: float = 0.1, **kwargs):
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"BertClassifier: num_classes must be a positive integer, got {num_classes!r}.")
        inputs = encoder_inputs()
        classifier = ClassificationHead(
            num_classes, dropout_rate, encoder.config.initializer_range, dtype=encoder.dtype_policy, name="classifier"
        )
        # Only the pooled [CLS] output is read: no other position of the last layer is computed.
        no_positions = keras.ops.zeros_like(inputs["input_word_ids"][:, :0])
        logits = classifier(encoder(inputs, output_positions=no_positions)["pooled_output"])
        kwargs.setdefault("name", "bert_classifier")
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.classifier = classifier
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
