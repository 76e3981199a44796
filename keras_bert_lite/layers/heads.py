"""Output heads: pooler, masked-LM, next-sentence, classification and span heads."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers import accelerated, checks
from keras_bert_lite.layers.activations import get_activation
from keras_bert_lite.layers.base import ConfigLayer
from keras_bert_lite.layers.embeddings import BertEmbeddings


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertPooler(ConfigLayer):
    """tanh(Dense(sequence_output[:, 0])): the [CLS] representation.

    Args:
        hidden_size: output width H.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        sequence_output: float [batch, seq, H].

    Returns:
        [batch, H] in the compute dtype.

    Example:

        >>> BertPooler(hidden_size=8)(ops.ones((2, 5, 8))).shape
        (2, 8)
    """

    _CONFIG_ARGS = ("hidden_size", "initializer_range")

    def __init__(self, hidden_size: int, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = self._dense(hidden_size, "dense", activation="tanh")

    def build(self, input_shape):
        self.dense.build((None, input_shape[-1]))

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.hidden_size)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class MaskedLMHead(ConfigLayer):
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
            `sequence_output` already holds just the predicted positions (as a `BertEncoder`
            called with `output_positions` returns them).

    Returns:
        float32 logits [batch, num_predictions, V].

    Raises:
        InvalidArgumentError: a masked position is outside [0, seq), naming `masked_positions`.

    Example:

        >>> embeddings = BertEmbeddings(vocab_size=100, hidden_size=8)
        >>> hidden = embeddings(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32"))
        >>> MaskedLMHead(embeddings)(hidden, ops.array([[1, 2], [3, 4]])).shape
        (2, 2, 100)
    """

    _CONFIG_ARGS = ("activation", "initializer_range", "layer_norm_eps")

    def __init__(
        self,
        embedding_layer: BertEmbeddings,
        activation: str = "gelu",
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.autocast = False  # the tied table is cast explicitly; LayerNorm reads its float32 weights
        self.embedding_layer = embedding_layer
        self.activation = activation
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.transform = self._dense(embedding_layer.hidden_size, "transform", activation=get_activation(activation))
        self.layer_norm = self._layer_norm("layer_norm")

    def build(self, sequence_output_shape, masked_positions_shape=None):
        if not self.embedding_layer.built:
            self.embedding_layer.build()
        hidden_size = self.embedding_layer.hidden_size
        self.transform.build((None, hidden_size))
        self.layer_norm.build((None, hidden_size))
        self.output_bias = self.add_weight(
            shape=(self.embedding_layer.vocab_size,), initializer="zeros", name="output_bias"
        )

    def call(self, sequence_output, masked_positions=None, training=None):
        x = sequence_output
        if masked_positions is not None:
            positions = checks.indices_in_range(
                masked_positions, tf.shape(x)[1], "MaskedLMHead: masked_positions must be in [0, seq)"
            )
            x = tf.gather(x, positions, batch_dims=1)
        batch, num_predictions, hidden = ops.shape(x)[0], ops.shape(x)[1], self.embedding_layer.hidden_size
        x = self.transform(ops.reshape(x, (batch * num_predictions, hidden)))
        x = ops.cast(accelerated.layer_norm(self.layer_norm, x, training), self.compute_dtype)
        # One 2-D MatMul with the table transposed in the kernel: no [H, V] transpose of the table
        # forward or of its gradient backward.
        table = ops.cast(self.embedding_layer.word_embeddings, self.compute_dtype)
        logits = tf.matmul(x, table, transpose_b=True)
        logits = tf.nn.bias_add(ops.cast(logits, "float32"), ops.cast(self.output_bias, "float32"))
        return ops.reshape(logits, (batch, num_predictions, self.embedding_layer.vocab_size))

    def get_config(self):
        config = super().get_config()
        config.update(embedding_layer=keras.saving.serialize_keras_object(self.embedding_layer))
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["embedding_layer"] = keras.saving.deserialize_keras_object(config["embedding_layer"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class ClassificationHead(ConfigLayer):
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

    Example:

        >>> ClassificationHead(num_classes=3)(ops.ones((2, 8))).shape
        (2, 3)
    """

    _CONFIG_ARGS = ("num_classes", "dropout_rate", "initializer_range")

    def __init__(
        self, num_classes: int, dropout_rate: float = 0.1, initializer_range: float = 0.02, **kwargs
    ):
        super().__init__(**kwargs)
        if num_classes < 1:
            raise ValueError(f"ClassificationHead: num_classes must be >= 1, got {num_classes}.")
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.dropout = self._dropout(dropout_rate, "dropout")
        self.dense = self._dense(num_classes, "dense")

    def build(self, input_shape):
        self.dense.build(input_shape)

    def call(self, x, training=None):
        return ops.cast(self.dense(accelerated.dropout(self.dropout, x, training)), "float32")


class _TwoLogitHead(ClassificationHead):
    """A `ClassificationHead` with two logits and no dropout; its config is `initializer_range`."""

    _CONFIG_ARGS = ("initializer_range",)

    def __init__(self, initializer_range: float = 0.02, **kwargs):
        super().__init__(num_classes=2, dropout_rate=0.0, initializer_range=initializer_range, **kwargs)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class NextSentenceHead(_TwoLogitHead):
    """BERT's next-sentence head: logits over {IsNext = 0, NotNext = 1} from the pooled output.

    Call args:
        pooled_output: float [batch, H].

    Returns:
        float32 logits [batch, 2].

    Example:

        >>> NextSentenceHead()(ops.ones((2, 8))).shape
        (2, 2)
    """


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class SpanHead(_TwoLogitHead):
    """Start and end logits for extractive QA (SQuAD): one dense layer to 2 per position.

    Args:
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        sequence_output: float [batch, seq, H].

    Returns:
        (start_logits, end_logits), each float32 [batch, seq].

    Example:

        >>> [logits.shape for logits in SpanHead()(ops.ones((2, 5, 8)))]
        [(2, 5), (2, 5)]
    """

    def call(self, sequence_output, training=None):
        logits = super().call(sequence_output, training)
        return logits[..., 0], logits[..., 1]
