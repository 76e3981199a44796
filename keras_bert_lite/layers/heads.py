"""Output heads: pooler, masked-LM, next-sentence, classification and span heads."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers.activations import get_activation
from keras_bert_lite.layers.dropout import Dropout
from keras_bert_lite.layers.embeddings import BertEmbeddings
from keras_bert_lite.layers.layer_norm import LayerNorm


def _initializer(stddev: float) -> keras.initializers.Initializer:
    return keras.initializers.TruncatedNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertPooler(keras.layers.Layer):
    """tanh(Dense(sequence_output[:, 0])): the [CLS] representation.

    Args:
        hidden_size: output width H.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        sequence_output: float [batch, seq, H].

    Returns:
        float [batch, H].
    """

    def __init__(self, hidden_size: int, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size, activation="tanh", kernel_initializer=_initializer(initializer_range), name="dense"
        )

    def build(self, input_shape):
        self.dense.build((None, input_shape[-1]))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class MaskedLMHead(keras.layers.Layer):
    """BERT's masked-LM head, computed only at the masked positions.

        h = LayerNorm(act(Dense(gather(sequence_output, positions))))
        logits = h @ word_embeddings^T + output_bias

    The decoder matrix is the word-embedding table of `embedding_layer` (tied, no copy); only the
    vocab-sized `output_bias` belongs to this layer.

    Args:
        embedding_layer: the `BertEmbeddings` whose `word_embeddings` [V, H] decode the output.
        activation: transform activation name ("gelu" = BERT's tanh approximation).
        initializer_range: stddev of the truncated-normal kernel initializer.
        layer_norm_eps: LayerNorm epsilon.

    Call args:
        sequence_output: float [batch, seq, H].
        masked_positions: int32 [batch, num_predictions], indices into seq; None when
            `sequence_output` already holds just the predicted positions (as
            `BertEncoder.sequence_output_at` returns them).

    Returns:
        float32 logits [batch, num_predictions, V].
    """

    def __init__(
        self,
        embedding_layer: BertEmbeddings,
        activation: str = "gelu",
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.embedding_layer = embedding_layer
        self.activation = activation
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.transform = keras.layers.Dense(
            embedding_layer.hidden_size,
            activation=get_activation(activation),
            kernel_initializer=_initializer(initializer_range),
            name="transform",
        )
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype="float32", name="layer_norm"
        )

    def build(self, sequence_output_shape, masked_positions_shape=None):
        hidden_size = self.embedding_layer.hidden_size
        self.transform.build((None, None, hidden_size))
        self.layer_norm.build((None, None, hidden_size))
        self.output_bias = self.add_weight(
            shape=(self.embedding_layer.vocab_size,), initializer="zeros", name="output_bias"
        )
        self.built = True

    def call(self, sequence_output, masked_positions=None):
        x = sequence_output
        if masked_positions is not None:
            x = ops.take_along_axis(x, ops.cast(masked_positions, "int32")[:, :, None], axis=1)
        x = ops.cast(self.layer_norm(self.transform(x)), self.compute_dtype)
        # One 2-D MatMul with the table transposed in the kernel: no [H, V] transpose of the table
        # forward or of its gradient backward, and oneDNN fuses the float32 bias add.
        batch, num_predictions, hidden = ops.shape(x)[0], ops.shape(x)[1], self.embedding_layer.hidden_size
        table = ops.cast(self.embedding_layer.word_embeddings, self.compute_dtype)
        logits = tf.matmul(ops.reshape(x, (batch * num_predictions, hidden)), table, transpose_b=True)
        logits = tf.nn.bias_add(ops.cast(logits, "float32"), ops.cast(self.output_bias, "float32"))
        return ops.reshape(logits, (batch, num_predictions, self.embedding_layer.vocab_size))

    def compute_output_shape(self, sequence_output_shape, masked_positions_shape=None):
        predicted_shape = masked_positions_shape or sequence_output_shape[:2]
        return (*predicted_shape, self.embedding_layer.vocab_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            embedding_layer=keras.saving.serialize_keras_object(self.embedding_layer),
            activation=self.activation,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["embedding_layer"] = keras.saving.deserialize_keras_object(config["embedding_layer"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class ClassificationHead(keras.layers.Layer):
    """Dropout then a dense layer to `num_classes` logits, over the last axis.

    Used on the pooled output ([batch, H] -> [batch, num_classes]) for sentence tasks, on every
    position ([batch, seq, H] -> [batch, seq, num_classes]) for token tasks, and with
    num_classes=2 on the pooled output as BERT's next-sentence head.

    Args:
        num_classes: number of output logits (1 for regression).
        dropout_rate: dropout before the dense layer (training only).
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        x: float [..., H].

    Returns:
        float32 logits [..., num_classes].
    """

    def __init__(
        self, num_classes: int, dropout_rate: float = 0.1, initializer_range: float = 0.02, **kwargs
    ):
        super().__init__(**kwargs)
        if num_classes < 1:
            raise ValueError(f"ClassificationHead: num_classes must be >= 1, got {num_classes}.")
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.dropout = Dropout(dropout_rate)
        self.dense = keras.layers.Dense(
            num_classes, kernel_initializer=_initializer(initializer_range), name="dense"
        )

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, x, training=None):
        return ops.cast(self.dense(self.dropout(x, training=training)), "float32")

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.num_classes)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class NextSentenceHead(ClassificationHead):
    """BERT's next-sentence head: logits over {IsNext = 0, NotNext = 1} from the pooled output.

    Call args:
        pooled_output: float [batch, H].

    Returns:
        float32 logits [batch, 2].
    """

    def __init__(self, initializer_range: float = 0.02, **kwargs):
        kwargs.pop("num_classes", None)
        kwargs.pop("dropout_rate", None)
        super().__init__(num_classes=2, dropout_rate=0.0, initializer_range=initializer_range, **kwargs)

    def get_config(self):
        config = super().get_config()
        del config["num_classes"], config["dropout_rate"]
        return config


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class SpanHead(keras.layers.Layer):
    """Start and end logits for extractive QA (SQuAD): one dense layer to 2 per position.

    Args:
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        sequence_output: float [batch, seq, H].

    Returns:
        (start_logits, end_logits), each float32 [batch, seq].
    """

    def __init__(self, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(2, kernel_initializer=_initializer(initializer_range), name="dense")

    def build(self, input_shape):
        self.dense.build(input_shape)
        self.built = True

    def call(self, sequence_output):
        logits = ops.cast(self.dense(sequence_output), "float32")
        return logits[..., 0], logits[..., 1]

    def compute_output_shape(self, input_shape):
        return (input_shape[:-1], input_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range)
        return config
