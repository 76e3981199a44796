"""`BertEncoder`: the BERT transformer encoder as a functional Keras model."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence

import h5py
import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert_lite.atomic import copy_atomically
from keras_bert_lite.config import BertConfig
from keras_bert_lite.layers import BertEmbeddings, BertPooler, TransformerEncoderBlock
from keras_bert_lite.models.rebuild import RebuiltModel
from keras_bert_lite.text.packer import OUTPUT_NAMES as INPUT_NAMES  # int32 [batch, seq], TF Hub's names

# The Dense sub-layers of each TransformerEncoderBlock that LoRA can target.
LORA_TARGETS = ("query", "key", "value", "attention_output", "intermediate", "output_dense")
DEFAULT_LORA_TARGETS = ("query", "value")  # KerasHub's default, after the LoRA paper
LORA_SUFFIX = ".lora.h5"


def encoder_inputs() -> dict[str, keras.KerasTensor]:
    """Fresh symbolic inputs `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch, seq])."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertEncoder(RebuiltModel):
    """BERT's encoder built from a `BertConfig`.

    Args:
        config: a `BertConfig` (or its dict).
        dtype: dtype policy of every layer, e.g. "mixed_bfloat16"; None follows the global
            policy (`keras.config.set_dtype_policy`). A `keras.dtype_policies.DTypePolicyMap`
            gives the layers at its paths their own policy (how `.keras` files of a quantized
            encoder name its quantized layers, as KerasHub's backbones do).
        lora_rank: if set, `enable_lora(lora_rank, lora_target_names)` on the new encoder (as
            `Dense(lora_rank=...)`; how `.keras` files of an encoder with LoRA rebuild it).
        lora_target_names: the Dense sub-layers of each block that get LoRA (see `enable_lora`).
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
    survive `.keras` files; `save_lora_weights` / `load_lora_weights` keep the LoRA factors alone.

    Example:

        >>> encoder = BertEncoder(BertConfig.preset("tiny"))
        >>> ids = np.array([[101, 7592, 102, 0]], "int32")
        >>> out = encoder({"input_word_ids": ids, "input_mask": (ids > 0).astype("int32"),
        ...                "input_type_ids": np.zeros_like(ids)})
        >>> out["sequence_output"].shape, out["pooled_output"].shape
        (TensorShape([1, 4, 128]), TensorShape([1, 128]))
    """

    def __init__(self, config: BertConfig | dict, dtype=None, lora_rank: int | None = None,
                 lora_target_names: Sequence[str] = DEFAULT_LORA_TARGETS, **kwargs):
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
        self.lora_rank = None
        self.lora_target_names = None
        if lora_rank is not None:
            self.enable_lora(lora_rank, lora_target_names)

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

    def enable_lora(self, rank: int, target_names: Sequence[str] = DEFAULT_LORA_TARGETS) -> None:
        """Freezes every weight and adds trainable LoRA factors to some Dense layers of each block.

        As KerasHub's backbones: `Dense.enable_lora(rank)` on the attention's query and value
        projections by default, so that fine-tuning trains only rank x (H + H) numbers per
        projection; task-model heads built on the encoder stay trainable. `lora_rank` and
        `lora_target_names` go in the config, as `Dense` keeps its `lora_rank`: a `.keras` file
        rebuilds the encoder with LoRA enabled. Keras saves each kernel with its LoRA update
        merged in, and after loading the layers (`LoraDense`) start new factors on the merged
        kernel (same outputs; a further `fit` trains them); `save_lora_weights` keeps the factors
        themselves.

        Args:
            rank: LoRA rank, a positive integer.
            target_names: which of each block's Dense sub-layers get LoRA, among `LORA_TARGETS`.

        Raises:
            ValueError: a bad rank or target name, or LoRA already enabled.
        """
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise ValueError(f"{self.name}.enable_lora: rank must be a positive integer, got {rank!r}.")
        target_names = list(target_names)
        unknown = [name for name in target_names if name not in LORA_TARGETS]
        if unknown or not target_names:
            raise ValueError(f"{self.name}.enable_lora: target_names {target_names} must name some of {LORA_TARGETS}.")
        if self.lora_rank is not None:
            raise ValueError(f"{self.name}.enable_lora: LoRA is already enabled (rank {self.lora_rank}).")
        for variable in self.weights:
            variable.trainable = False
        for block in self.transformer_layers:
            for name in target_names:
                getattr(block, name).enable_lora(rank)
        self.lora_rank, self.lora_target_names = rank, target_names

    def lora_layers(self) -> dict[str, keras.layers.Dense]:
        """The Dense layers with LoRA, by "transformer_layer_{i}/{name}" (empty without LoRA)."""
        return {f"{block.name}/{name}": getattr(block, name)
                for block in self.transformer_layers for name in self.lora_target_names or ()}

    def save_lora_weights(self, filepath: str | os.PathLike) -> str:
        """Writes the LoRA factors alone (an HDF5 file ending in ".lora.h5", as KerasHub's).

        A few MB for a base-sized model instead of the whole model: the rank, the target names
        and each LoRA layer's `lora_kernel_a` [in, rank] and `lora_kernel_b` [rank, out] (float32).
        `load_lora_weights` puts them on an encoder with the same base weights (e.g. the
        pre-trained checkpoint the adapters were trained from). Written atomically (local or
        any `tf.io.gfile` path). Task-model heads are not in it (they are in the model's
        `.keras` file or `save_weights`).

        Returns:
            `filepath`.

        Raises:
            ValueError: LoRA is not enabled, or `filepath` does not end in ".lora.h5".
        """
        filepath = self._lora_path(filepath)
        if self.lora_rank is None:
            raise ValueError(f"{self.name}.save_lora_weights: LoRA is not enabled; call enable_lora(rank) first.")
        with tempfile.TemporaryDirectory() as scratch:
            local = os.path.join(scratch, "adapters.lora.h5")
            with h5py.File(local, "w") as f:
                f.attrs["rank"] = self.lora_rank
                f.attrs["target_names"] = json.dumps(list(self.lora_target_names))
                for path, layer in self.lora_layers().items():
                    f[f"{path}/lora_kernel_a"] = np.asarray(layer.lora_kernel_a)
                    f[f"{path}/lora_kernel_b"] = np.asarray(layer.lora_kernel_b)
            return copy_atomically(local, filepath)

    def load_lora_weights(self, filepath: str | os.PathLike) -> None:
        """Sets the LoRA factors from a `save_lora_weights` file, enabling LoRA (with the file's
        rank and targets) if it is not.

        The factors add to the kernels this encoder holds: load them onto the base weights they
        were trained from (e.g. the pre-trained checkpoint), not onto a `.keras` file of the model
        they were trained in, whose kernels hold them merged already.

        Raises:
            ValueError: naming the file: not a ".lora.h5" file, LoRA enabled with another rank or
                other targets, or factors missing or of other shapes than this encoder's layers.
        """
        filepath = self._lora_path(filepath)
        with tf.io.gfile.GFile(filepath, "rb") as raw, h5py.File(raw, "r") as f:
            rank, target_names = int(f.attrs["rank"]), json.loads(f.attrs["target_names"])
            if self.lora_rank is not None and (self.lora_rank, self.lora_target_names) != (rank, target_names):
                raise ValueError(
                    f"{filepath} holds LoRA of rank {rank} on {target_names}; {self.name} has rank "
                    f"{self.lora_rank} on {self.lora_target_names}."
                )
            factors = {}
            for i in range(self.config.num_hidden_layers):
                for name in target_names:
                    fan_in, fan_out = self._dense_shape(name)
                    for key, shape in (("lora_kernel_a", (fan_in, rank)), ("lora_kernel_b", (rank, fan_out))):
                        path = f"transformer_layer_{i}/{name}/{key}"
                        found = f[path].shape if path in f else "missing"
                        if found != shape:
                            raise ValueError(f"{filepath}: {path} is {found}; {self.name} needs {shape}.")
                        factors[path] = f[path][()]
        if self.lora_rank is None:
            self.enable_lora(rank, target_names)
        for path, layer in self.lora_layers().items():
            layer.lora_kernel_a.assign(factors[f"{path}/lora_kernel_a"])
            layer.lora_kernel_b.assign(factors[f"{path}/lora_kernel_b"])

    def _dense_shape(self, name: str) -> tuple[int, int]:
        """(inputs, units) of the Dense sub-layer `name` of each block."""
        hidden, intermediate = self.config.hidden_size, self.config.intermediate_size
        return {"intermediate": (hidden, intermediate), "output_dense": (intermediate, hidden)}.get(name, (hidden, hidden))

    def _lora_path(self, filepath) -> str:
        filepath = os.fspath(filepath)
        if not filepath.endswith(LORA_SUFFIX):
            raise ValueError(f"LoRA weight files end in {LORA_SUFFIX!r}; got {filepath}.")
        return filepath

    def constructor_config(self) -> dict:
        config = {"config": self.config.to_dict(), "dtype": self.dtype_default()}
        if self.lora_rank is not None:
            config.update(lora_rank=self.lora_rank, lora_target_names=list(self.lora_target_names))
        return config


def _no_positions(output_positions) -> bool:
    """Whether `output_positions` asks for no position besides [CLS] (an empty tuple or list)."""
    return isinstance(output_positions, (tuple, list)) and len(output_positions) == 0
