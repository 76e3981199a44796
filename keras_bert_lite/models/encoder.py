"""`BertEncoder`: the BERT transformer encoder as a functional Keras model."""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import ops

from keras_bert_lite.config import BertConfig
from keras_bert_lite.layers import BertEmbeddings, BertPooler, TransformerEncoderBlock
from keras_bert_lite.models.rebuild import RebuiltModel
from keras_bert_lite.text.packer import OUTPUT_NAMES as INPUT_NAMES  # int32 [batch, seq], TF Hub's names

# The Dense sub-layers of each TransformerEncoderBlock that LoRA can target.
LORA_TARGETS = ("query", "key", "value", "attention_output", "intermediate", "output_dense")


def encoder_inputs() -> dict[str, keras.KerasTensor]:
    """Fresh symbolic inputs `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch, seq])."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertEncoder(RebuiltModel):
    """BERT's encoder built from a `BertConfig`.

    Args:
        config: a `BertConfig` (or its dict).
        dtype: dtype policy of every layer, e.g. "mixed_bfloat16"; None follows the global
            policy (`keras.config.set_dtype_policy`).
        **kwargs: `keras.Model` arguments (`name`, `trainable`).

    Inputs (a dict, each int32 [batch, seq], any 1 <= seq <= config.max_position_embeddings):
        input_word_ids: WordPiece ids in [0, vocab_size).
        input_mask: 1 for real tokens, 0 for padding.
        input_type_ids: segment ids (0 for sentence A, 1 for sentence B).

    Call args (besides `inputs` and `training`):
        output_positions: optional int [batch, P], indices into seq, or `()` for none. When
            given, the outputs are `sequence_output` [batch, P, H] at those positions only
            (P = 0 for `()`) and `pooled_output`, and the last layer computes only those
            positions and [CLS] (the pre-trainer reads the masked positions, a classifier none:
            `()`, which being no tensor keeps `plot_model(expand_nested=True)` working), skipping
            most of that layer's work. Task models call the encoder this way, so Keras sees it
            as one nested model.

    Outputs (a dict, in the compute dtype):
        sequence_output: [batch, seq, H], the last layer.
        pooled_output: [batch, H], tanh(Dense) of the [CLS] position.
        encoder_outputs: [L, batch, seq, H], every layer's output (for feature extraction);
            `encoder_outputs[i]` is layer i's, as in the list the Model Garden returns. One
            tensor, not a list, so that the outputs are a flat dict of tensors, as SavedModel
            signatures (`Model.export`) need. Being layer-major, it comes whole out of
            `predict()` only for a single batch (`predict` joins batches on the first axis);
            `BertFeatureExtractor` gives batch-major per-layer features.

    Raises:
        InvalidArgumentError / ValueError: naming the input, for ids outside the vocabulary or
            segment table, inputs of different shapes, a sequence of length 0 or longer than
            `max_position_embeddings`, output positions outside [0, seq).

    Sub-layers: `embeddings` (BertEmbeddings), `transformer_layers` (L TransformerEncoderBlocks),
    `pooler` (BertPooler). `quantize()` and `enable_lora()` work as on KerasHub's backbones and
    survive `.keras` files.

    Example:

        >>> encoder = BertEncoder(BertConfig.preset("tiny"))
        >>> ids = np.array([[101, 7592, 102, 0]], "int32")
        >>> out = encoder({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
        ...                "input_type_ids": np.zeros_like(ids)})
        >>> out["sequence_output"].shape, out["pooled_output"].shape
        (TensorShape([1, 4, 128]), TensorShape([1, 128]))
    """

    def __init__(self, config: BertConfig | dict, dtype=None, **kwargs):
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
            dtype=dtype,
            name="embeddings",
        )
        x = embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        transformer_layers = []
        layer_outputs = []
        for i in range(config.num_hidden_layers):
            block = TransformerEncoderBlock(
                num_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size,
                activation=config.hidden_act,
                dropout_rate=config.hidden_dropout_prob,
                attention_dropout_rate=config.attention_probs_dropout_prob,
                initializer_range=config.initializer_range,
                layer_norm_eps=config.layer_norm_eps,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            x = block(x, inputs["input_mask"])
            transformer_layers.append(block)
            layer_outputs.append(x)
        pooler = BertPooler(config.hidden_size, config.initializer_range, dtype=dtype, name="pooler")
        outputs = {
            "sequence_output": x,
            "pooled_output": pooler(x),
            "encoder_outputs": ops.stack(layer_outputs, axis=0),
        }
        kwargs.setdefault("name", "bert_encoder")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        if dtype is not None:  # a functional model does not take it from its arguments
            self.dtype_policy = dtype
        self.config = config
        self.embeddings = embeddings
        self.transformer_layers = transformer_layers
        self.pooler = pooler

    def call(self, inputs, training=None, mask=None, output_positions=None):
        if output_positions is None:
            return super().call(inputs, training=training, mask=mask)
        missing = [name for name in INPUT_NAMES if name not in inputs]
        if missing:
            raise ValueError(f"{self.name}: inputs lack {missing}; expected a dict with {list(INPUT_NAMES)}.")
        ids, mask, type_ids = (ops.cast(inputs[name], "int32") for name in INPUT_NAMES)
        x = self.embeddings(ids, type_ids, training=training)
        *lower_layers, last_layer = self.transformer_layers
        for block in lower_layers:
            x = block(x, mask, training=training)
        # The pooler reads [CLS]: the last layer computes it first, then the requested positions.
        positions = ops.zeros((ops.shape(ids)[0], 1), "int32")
        if not _no_positions(output_positions):
            positions = ops.concatenate([positions, ops.cast(output_positions, "int32")], axis=1)
        hidden = last_layer(x, mask, training=training, output_positions=positions)
        return {"sequence_output": hidden[:, 1:], "pooled_output": self.pooler(hidden)}

    def compute_output_spec(self, inputs, training=None, mask=None, output_positions=None):
        if output_positions is None:
            return super().compute_output_spec(inputs, training=training, mask=mask)
        batch, hidden = inputs["input_word_ids"].shape[0], self.config.hidden_size
        return {
            "sequence_output": keras.KerasTensor(
                (batch, 0 if _no_positions(output_positions) else output_positions.shape[1], hidden),
                self.transformer_layers[-1].compute_dtype,
            ),
            "pooled_output": keras.KerasTensor((batch, hidden), self.pooler.compute_dtype),
        }

    def enable_lora(self, rank: int, target_names: Sequence[str] = ("query", "value")) -> None:
        """Freezes every weight and adds trainable LoRA factors to some Dense layers of each block.

        As KerasHub's backbones: `Dense.enable_lora(rank)` on the attention's query and value
        projections by default, so that fine-tuning trains only rank x (H + H) numbers per
        projection; task-model heads built on the encoder stay trainable. The call is kept in the
        config, so `.keras` files of the model load with LoRA enabled (Keras saves each kernel with
        its LoRA update merged in).

        Args:
            rank: LoRA rank, a positive integer.
            target_names: which of each block's Dense sub-layers get LoRA, among `LORA_TARGETS`.

        Raises:
            ValueError: a bad rank or target name, or LoRA already enabled.
        """
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise ValueError(f"{self.name}.enable_lora: rank must be a positive integer, got {rank!r}.")
        unknown = [name for name in target_names if name not in LORA_TARGETS]
        if unknown or not target_names:
            raise ValueError(f"{self.name}.enable_lora: target_names {list(target_names)} must name some of {LORA_TARGETS}.")
        if any(edit["method"] == "enable_lora" for edit in self.edits):
            raise ValueError(f"{self.name}.enable_lora: LoRA is already enabled.")
        for variable in self.weights:
            variable.trainable = False
        for block in self.transformer_layers:
            for name in target_names:
                getattr(block, name).enable_lora(rank)
        self._record_edit({"method": "enable_lora", "rank": rank, "target_names": list(target_names)})

    def constructor_config(self) -> dict:
        return {"config": self.config.to_dict(), "dtype": self.dtype_policy}


def _no_positions(output_positions) -> bool:
    """Whether `output_positions` asks for no position besides [CLS] (an empty tuple or list)."""
    return isinstance(output_positions, (tuple, list)) and len(output_positions) == 0
