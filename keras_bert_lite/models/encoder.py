"""`BertEncoder`: the BERT transformer encoder as a functional Keras model."""

from __future__ import annotations

import keras

from keras_bert_lite.config import BertConfig
from keras_bert_lite.layers import BertEmbeddings, BertPooler, TransformerEncoderBlock

# Model inputs, int32 [batch, seq], named as in TF Hub and the Model Garden.
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def encoder_inputs() -> dict[str, keras.KerasTensor]:
    """Fresh symbolic inputs `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch, seq])."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertEncoder(keras.Model):
    """BERT's encoder built from a `BertConfig`.

    Inputs (a dict, each int32 [batch, seq], any seq <= config.max_position_embeddings):
        input_word_ids: WordPiece ids.
        input_mask: 1 for real tokens, 0 for padding.
        input_type_ids: segment ids (0 for sentence A, 1 for sentence B).

    Outputs (a dict):
        sequence_output: float [batch, seq, H], the last layer.
        pooled_output: float [batch, H], tanh(Dense) of the [CLS] position.
        encoder_outputs: list of L float [batch, seq, H], every layer's output (for feature
            extraction).

    Sub-layers: `embeddings` (BertEmbeddings), `transformer_layers` (L TransformerEncoderBlocks),
    `pooler` (BertPooler).

    Example:

        >>> encoder = BertEncoder(BertConfig.preset("tiny"))
        >>> ids = np.array([[101, 7592, 102, 0]], "int32")
        >>> out = encoder({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
        ...                "input_type_ids": np.zeros_like(ids)})
        >>> out["sequence_output"].shape, out["pooled_output"].shape
        (TensorShape([1, 4, 128]), TensorShape([1, 128]))
    """

    def __init__(self, config: BertConfig | dict, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        inputs = encoder_inputs()
        embeddings = BertEmbeddings(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            dropout_rate=config.hidden_dropout_prob,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            name="embeddings",
        )
        x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        transformer_layers = []
        encoder_outputs = []
        for i in range(config.num_hidden_layers):
            block = TransformerEncoderBlock(
                num_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size,
                activation=config.hidden_act,
                dropout_rate=config.hidden_dropout_prob,
                attention_dropout_rate=config.attention_probs_dropout_prob,
                initializer_range=config.initializer_range,
                layer_norm_eps=config.layer_norm_eps,
                name=f"transformer_layer_{i}",
            )
            x = block(x, inputs["input_mask"])
            transformer_layers.append(block)
            encoder_outputs.append(x)
        pooler = BertPooler(config.hidden_size, config.initializer_range, name="pooler")
        outputs = {
            "sequence_output": x,
            "pooled_output": pooler(x),
            "encoder_outputs": encoder_outputs,
        }
        kwargs.setdefault("name", "bert_encoder")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.config = config
        self.embeddings = embeddings
        self.transformer_layers = transformer_layers
        self.pooler = pooler

    def sequence_output_at(self, inputs: dict, positions):
        """The last layer's output at `positions` only, computing no other position there.

        Calls this encoder's layers (weights shared) with the last transformer layer restricted
        to `positions` (see `TransformerEncoderBlock`), which skips most of that layer's work
        when a model reads a few positions: the pre-trainer reads [CLS] and the masked
        positions, the classifier [CLS]. Works on symbolic inputs (to build a functional model)
        and on tensors.

        Args:
            inputs: dict of the encoder's three int32 [batch, seq] inputs.
            positions: int32 [batch, P], indices into seq.

        Returns:
            float [batch, P, H], equal to `self(inputs)["sequence_output"]` gathered at
            `positions`.
        """
        x = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        *lower_layers, last_layer = self.transformer_layers
        for block in lower_layers:
            x = block(x, inputs["input_mask"])
        return last_layer(x, inputs["input_mask"], output_positions=positions)

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
