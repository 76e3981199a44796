"""`BertClassifier`: sentence and sentence-pair classification (or regression) on [CLS] or on
pooled token vectors."""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert_lite.layers import ClassificationHead
from keras_bert_lite.layers.pooling import SentencePooling
from keras_bert_lite.models import text_inputs
from keras_bert_lite.models.encoder import BertEncoder, encoder_inputs
from keras_bert_lite.models.task_model import TextTaskModel
from keras_bert_lite.text.preprocessor import BertPreprocessor


class ClassificationTaskModel(TextTaskModel):
    """The base of `BertClassifier` and `BertTokenClassifier`: a `ClassificationHead` on what
    `head_input(encoder, inputs)` reads from the encoder, with the arguments both take (see
    `BertClassifier`), named `DEFAULT_NAME` unless a `name` is given."""

    CONFIG_ARGS = ("num_classes", "dropout_rate", "label_names", "activation")

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout_rate: float = 0.1,
                 label_names: Sequence[str] | None = None, preprocessor: BertPreprocessor | None = None,
                 activation: str | None = None, **kwargs):
        model_name = type(self).__name__
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"{model_name}: num_classes must be a positive integer, got {num_classes!r}.")
        if label_names is not None:  # a tuple naming each class once
            if isinstance(label_names, str) or not all(isinstance(name, str) for name in label_names):
                raise ValueError(f"{model_name}: label_names must be a list of strings, got {label_names!r}.")
            label_names = tuple(label_names)
            if len(label_names) != num_classes or len(set(label_names)) != len(label_names):
                raise ValueError(f"{model_name}: label_names must name each of the {num_classes} classes "
                                 f"once, got {list(label_names)}.")
        if activation not in (None, "softmax"):
            raise ValueError(f"{model_name}: activation must be None (logits) or 'softmax', got {activation!r}.")
        inputs = encoder_inputs()
        classifier = ClassificationHead(
            num_classes, dropout_rate, encoder.config.initializer_range,
            dtype=self.head_dtype(encoder, kwargs.pop("dtype", None)), name="classifier",
        )
        outputs = classifier(self.head_input(encoder, inputs))
        if activation == "softmax":
            outputs = keras.layers.Activation("softmax", dtype="float32", name="softmax")(outputs)
        super().__init__(inputs=inputs, outputs=outputs, **{"name": self.DEFAULT_NAME, **kwargs})
        self.attach(encoder, preprocessor)
        self.classifier = classifier
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.label_names = label_names
        self.activation = activation


def check_pooling(pooling: str | Sequence[str]) -> str | tuple[str, ...]:
    """`BertClassifier`'s `pooling` as it keeps it: "pooler", or a tuple of `SentencePooling` modes (a
    `.keras` file holds a list). Scripts check their flag with it before reading any data.

    Raises:
        ValueError: naming `pooling` and the known modes.
    """
    if pooling == "pooler" or list(pooling) == ["pooler"]:
        return "pooler"
    try:
        return SentencePooling(pooling).modes
    except ValueError as error:
        raise ValueError(f"BertClassifier: pooling must be 'pooler' or modes of SentencePooling ({error})") from None


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertClassifier(ClassificationTaskModel):
    """A `BertEncoder` with dropout and a dense layer on the pooled [CLS] output (the paper's
    classifier), or on the token vectors pooled as sentence-transformers pools them.

    With the pooler, the encoder's last layer is computed only at [CLS] (the encoder's
    `output_positions`): the same logits as with the full encoder, with most of that layer's work
    skipped.

    Args:
        encoder: the (usually pre-trained) `BertEncoder`; its weights are shared, not copied.
        num_classes: number of classes; 1 makes a regression model (e.g. STS-B similarity).
        dropout_rate: dropout on the pooled output before the dense layer (training only).
        label_names: optional names of the classes in id order (kept in the config): labels
            `fit` and `evaluate` accept in place of ids, and what `predict_labels` returns.
        preprocessor: optional `BertPreprocessor` for raw text (see `TextTaskModel`).
        activation: None (default): the model outputs logits; "softmax": probabilities (as
            KerasHub's `activation`). The default loss reads either.
        pooling: what the head reads. "pooler" (default): the encoder's `pooled_output`, the
            tanh layer on [CLS] that pre-training trains with next-sentence prediction, as in the
            paper, KerasHub and Hugging Face. Otherwise one or more `SentencePooling` modes over
            the last layer's real tokens, e.g. "mean", with float32 [batch, len(modes) * H] into
            the head; the pooler is then unread (not among the trainable weights). The main
            job's small encoder transfers better on its mean token vector to text unlike its
            corpus (benchmarks/README.md, "Mean pooling when fine-tuning").

    Inputs: token ids, a dict of int32 [batch, seq] `input_word_ids`, `input_mask`,
    `input_type_ids`; with a preprocessor, `fit`/`evaluate`/`predict` also take texts or
    `(text_a, text_b)` pairs (see `keras_bert_lite.models.text_inputs.text_dataset`). A text (or
    pair) longer than the preprocessor's `seq_length` is truncated to its first word pieces (a
    pair's longer text loses pieces first), as in the paper; the number truncated is logged as a
    warning for texts in memory, and `preprocessor.count_truncated(texts)` counts them.

    Outputs:
        Calling the model and `predict`: float32 logits [batch, num_classes] (probabilities
        with `activation="softmax"`; for num_classes=1, the value [batch, 1]).
        `predict_labels`: the most probable class names.

    Training: the default `compile()` (see `TextTaskModel.compile`) uses
    `SparseCategoricalCrossentropy` and accuracy (`MeanSquaredError` for regression).

    Attributes: `encoder`, `classifier` (the `ClassificationHead`), `num_classes`, `label_names`,
    `pooling` ("pooler" or a tuple of modes), `preprocessor`.

    Example:

        >>> clf = BertClassifier.from_checkpoint("all-MiniLM-L6-v2", num_classes=2, seq_length=64,
        ...                                      label_names=["negative", "positive"])
        >>> clf.fit(["a warm, funny film", "dull and slow"], ["positive", "negative"], epochs=3)
        >>> clf.predict(["an instant classic"])          # logits [1, 2]
        >>> clf.predict_labels(["an instant classic"])   # ["positive"]
        >>> clf.save("clf.keras")                        # weights, config and vocabulary
    """

    DEFAULT_NAME = "bert_classifier"
    CONFIG_ARGS = (*ClassificationTaskModel.CONFIG_ARGS, "pooling")

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout_rate: float = 0.1,
                 label_names: Sequence[str] | None = None, preprocessor: BertPreprocessor | None = None,
                 activation: str | None = None, pooling: str | Sequence[str] = "pooler", **kwargs):
        if num_classes == 1 and (label_names is not None or activation is not None):
            raise ValueError("BertClassifier: a regression model (num_classes=1) has no label_names or activation.")
        self.pooling = check_pooling(pooling)  # read by head_input, which the base constructor calls
        if self.pooling != "pooler":
            self.token_pooling = SentencePooling(self.pooling, name="pooling")
        super().__init__(encoder, num_classes, dropout_rate, label_names, preprocessor, activation, **kwargs)

    @property
    def UNREAD_ENCODER_LAYERS(self) -> tuple[str, ...]:  # noqa: N802 (the base class's name)
        return () if self.pooling == "pooler" else ("pooler",)

    def head_input(self, encoder, inputs):
        if self.pooling == "pooler":
            return encoder(inputs, output_positions=())["pooled_output"]
        return self.token_pooling(encoder(inputs)["sequence_output"], inputs["input_mask"])

    def text_batches(self, x, y=None, sample_weight=None, batch_size: int = 32, shuffle: bool = False):
        """As `TextTaskModel.text_batches`; texts longer than the preprocessor's `seq_length` are
        truncated (their first pieces kept), and how many is logged as a warning for texts in
        memory (`preprocessor.count_truncated(texts)` counts them too)."""
        if y is not None and self.label_names is not None:
            y = self._label_ids(y)
        batches = super().text_batches(x, y, sample_weight, batch_size, shuffle)
        if not isinstance(x, tf.data.Dataset):
            self._log_truncated(x)
        return batches

    def _log_truncated(self, x) -> None:
        preprocessor, truncated, total = self.require_preprocessor(), 0, 0
        for text, *_ in text_inputs.text_dataset(x, batch_size=1024):
            truncated += preprocessor.count_truncated(text)
            total += int(tf.shape(tf.nest.flatten(text)[0])[0])
        if truncated:
            logging.warning("%s: %d of %d texts have more word pieces than seq_length=%d holds and are truncated "
                            "(the model sees their first pieces).", self.name, truncated, total,
                            preprocessor.seq_length)

    def _label_ids(self, y):
        """Label names in `y` as class ids (ids stay as they are)."""
        values = np.asarray(y, dtype=object)
        if values.ndim != 1 or not any(isinstance(value, str) for value in values):
            return y
        index = {name: i for i, name in enumerate(self.label_names)}
        for i, value in enumerate(values):
            if value not in index:
                raise ValueError(f"y[{i}] is {value!r}, not one of the label names {list(self.label_names)}.")
        return np.array([index[value] for value in values], "int32")

    def default_compile_arguments(self) -> dict:
        if self.num_classes == 1:
            return {"loss": keras.losses.MeanSquaredError()}
        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=self.activation is None),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }

    def predict_labels(self, x, batch_size: int | None = None, verbose="auto") -> list[str]:
        """The most probable class of each example (argmax of `predict`), by name (`label_names`,
        else "0", "1", ...).

        Args:
            x: texts (with a preprocessor) or token ids, as for `predict`.
            batch_size, verbose: as for `predict`.

        Raises:
            ValueError: a regression model (num_classes=1).
        """
        if self.num_classes == 1:
            raise ValueError(f"{self.name} is a regression model (num_classes=1): predict() gives its values.")
        names = self.label_names or tuple(str(i) for i in range(self.num_classes))
        scores = self.predict(x, batch_size=batch_size, verbose=verbose)
        return [names[i] for i in np.argmax(scores, axis=-1)]
