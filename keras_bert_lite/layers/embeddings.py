"""`BertEmbeddings`: word + learned position + segment embeddings, LayerNorm, dropout."""

from __future__ import annotations

import keras
from keras import ops

from keras_bert_lite.layers.dropout import Dropout
from keras_bert_lite.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertEmbeddings(keras.layers.Layer):
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

    Call args:
        input_word_ids: int32 [batch, seq] token ids.
        input_type_ids: int32 [batch, seq] segment ids.
        training: bool, enables dropout.

    Returns:
        float [batch, seq, hidden_size].

    The word table is exposed as `embeddings.word_embeddings` ([vocab_size, H]) so that an MLM
    decoder can be tied to it.

    Example:

        >>> layer = BertEmbeddings(vocab_size=100, hidden_size=8, max_position_embeddings=16,
        ...                        type_vocab_size=2)
        >>> layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32")).shape
        (2, 5, 8)
    """

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
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype="float32", name="layer_norm"
        )
        self.dropout = Dropout(dropout_rate)

    def build(self, input_shape=None):
        initializer = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.word_embeddings = self.add_weight(
            shape=(self.vocab_size, self.hidden_size), initializer=initializer, name="word_embeddings"
        )
        self.position_embeddings = self.add_weight(
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=initializer,
            name="position_embeddings",
        )
        self.token_type_embeddings = self.add_weight(
            shape=(self.type_vocab_size, self.hidden_size),
            initializer=initializer,
            name="token_type_embeddings",
        )
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_length = ops.shape(input_word_ids)[1]
        if isinstance(seq_length, int) and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"BertEmbeddings: sequence length {seq_length} exceeds max_position_embeddings "
                f"{self.max_position_embeddings}."
            )
        x = ops.take(self.word_embeddings, input_word_ids, axis=0)
        x = x + ops.take(self.token_type_embeddings, input_type_ids, axis=0)
        x = x + self.position_embeddings[None, :seq_length]
        x = self.layer_norm(x)
        return self.dropout(ops.cast(x, self.compute_dtype), training=training)

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape=None):
        return (*input_word_ids_shape, self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config
