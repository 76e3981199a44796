"""`BertEmbeddings`: word + learned position + segment embeddings, LayerNorm, dropout."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers import accelerated, checks
from keras_bert_lite.layers.base import ConfigLayer


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertEmbeddings(ConfigLayer):
    """BERT's input embeddings.

    output = Dropout(LayerNorm(word[ids] + position[0:seq] + segment[type_ids]))

    Args:
        vocab_size: rows of the word-embedding table.
        hidden_size: embedding width H.
        max_position_embeddings: rows of the learned position table; the longest sequence.
        type_vocab_size: rows of the segment table.
        dropout_rate: dropout applied after LayerNorm (training only).
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_eps: LayerNorm epsilon.
        **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`: a dtype policy, also given to
            the `LayerNormalization` and `Dropout` sub-layers).

    Call args:
        input_word_ids: int [batch, seq] token ids, in [0, vocab_size).
        input_type_ids: int [batch, seq] segment ids, in [0, type_vocab_size).
        training: bool, enables dropout.

    Returns:
        [batch, seq, hidden_size] in the compute dtype.

    Raises:
        ValueError / InvalidArgumentError (see `keras_bert_lite.layers.checks`): naming the input,
            for ids outside their table (a negative id would otherwise select a row from the end),
            ids and type ids of different shapes, a sequence of length 0 or longer than
            `max_position_embeddings`.

    The tables are plain weights (`word_embeddings` [vocab_size, H], `position_embeddings`,
    `token_type_embeddings`), so that an MLM decoder can be tied to the word table; they stay
    in float when a model is quantized (a lookup is not a matmul).

    Example:

        >>> layer = BertEmbeddings(vocab_size=100, hidden_size=8, max_position_embeddings=16,
        ...                        type_vocab_size=2)
        >>> layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32")).shape
        (2, 5, 8)
    """

    _CONFIG_ARGS = (
        "vocab_size", "hidden_size", "max_position_embeddings", "type_vocab_size", "dropout_rate",
        "initializer_range", "layer_norm_eps",
    )

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        dropout_rate: float = 0.1,
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.autocast = False  # the tables are cast explicitly; LayerNorm reads its float32 weights
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.layer_norm = self._layer_norm("layer_norm")
        self.dropout = self._dropout(dropout_rate, "dropout")

    def build(self, input_word_ids_shape=None, input_type_ids_shape=None):
        initializer = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        for name, rows in (
            ("word_embeddings", self.vocab_size),
            ("position_embeddings", self.max_position_embeddings),
            ("token_type_embeddings", self.type_vocab_size),
        ):
            setattr(self, name, self.add_weight(shape=(rows, self.hidden_size), initializer=initializer, name=name))
        self.layer_norm.build((None, None, self.hidden_size))

    def call(self, input_word_ids, input_type_ids, training=None):
        ids = checks.indices_in_range(
            input_word_ids, self.vocab_size, f"BertEmbeddings: input_word_ids must be in [0, vocab_size = {self.vocab_size})"
        )
        ids = checks.length_in_range(
            ids, self.max_position_embeddings,
            f"BertEmbeddings: the sequence length of input_word_ids must be in [1, max_position_embeddings = "
            f"{self.max_position_embeddings}]",
        )
        type_ids = checks.indices_in_range(
            input_type_ids, self.type_vocab_size,
            f"BertEmbeddings: input_type_ids must be in [0, type_vocab_size = {self.type_vocab_size})",
        )
        type_ids = checks.same_shape(
            type_ids, (ids.shape, tf.shape(ids)), "BertEmbeddings: input_type_ids must have the shape of input_word_ids"
        )
        # Rows are looked up first and then cast, never the whole table.
        dtype = self.compute_dtype
        x = ops.cast(tf.gather(self.word_embeddings, ids), dtype)
        x = x + ops.cast(tf.gather(self.token_type_embeddings, type_ids), dtype)
        x = x + ops.cast(self.position_embeddings[: tf.shape(ids)[1]], dtype)[None]
        x = accelerated.layer_norm(self.layer_norm, x, training)
        return accelerated.dropout(self.dropout, x, training)

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape=None):
        return (*input_word_ids_shape, self.hidden_size)
