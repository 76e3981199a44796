"""Which checkpoint tensor holds which model weight, in Google's and Hugging Face's naming.

Google's TF1 names (`bert/encoder/layer_0/attention/self/query/kernel`) store dense kernels as
[in, out] like Keras, except `cls/seq_relationship/output_weights` which is [2, H]. Hugging Face
names (`encoder.layer.0.attention.self.query.weight`) are PyTorch `nn.Linear` weights, [out, in].
Hugging Face names are listed without the `bert.` prefix that `BertForPreTraining` adds.

This package imports no model class, so that the models may use it (`from_checkpoint`): a
`BertEncoder` and a `BertPretrainer` are known here by the layers they hold, as read below.
"""

from __future__ import annotations

import dataclasses

import keras

# Checkpoint names of the pre-training heads, which an encoder alone does not use.
GOOGLE_HEAD_PREFIXES = ("cls/predictions/", "cls/seq_relationship/")
HF_HEAD_PREFIXES = ("cls.predictions.", "cls.seq_relationship.")


@dataclasses.dataclass(frozen=True)
class WeightSpec:
    """One model weight and the checkpoint tensor that holds it.

    Attributes:
        name: the tensor's name in the checkpoint.
        variable: the model's `keras.Variable`.
        transpose: the checkpoint stores the transpose of the (2-D) variable.
        sliceable: an embedding table whose checkpoint may have more rows than the model uses
            (position and segment tables); the first rows are loaded.
    """

    name: str
    variable: keras.Variable
    transpose: bool = False
    sliceable: bool = False

    @property
    def checkpoint_shape(self) -> tuple[int, ...]:
        """The shape the checkpoint tensor must have (before any slicing)."""
        shape = tuple(self.variable.shape)
        return shape[::-1] if self.transpose else shape


# Rows: (variable, Google name, Hugging Face name, Google transposed, HF transposed, sliceable).
_Row = tuple[keras.Variable, str, str, bool, bool, bool]


def _dense(layer: keras.layers.Dense, google: str, hf: str) -> list[_Row]:
    return [
        (layer.kernel, f"{google}/kernel", f"{hf}.weight", False, True, False),
        (layer.bias, f"{google}/bias", f"{hf}.bias", False, False, False),
    ]


def _layer_norm(layer: keras.layers.LayerNormalization, google: str, hf: str) -> list[_Row]:
    return [
        (layer.gamma, f"{google}/gamma", f"{hf}.weight", False, False, False),
        (layer.beta, f"{google}/beta", f"{hf}.bias", False, False, False),
    ]


def is_pretrainer(model: keras.Model) -> bool:
    """Whether `model` is a `BertPretrainer`: an encoder with the MLM and NSP heads."""
    return all(hasattr(model, name) for name in ("encoder", "masked_lm", "next_sentence"))


def has_masked_lm(model: keras.Model) -> bool:
    """Whether `model` is an encoder with the MLM head (a `BertPretrainer` or `BertMaskedLM`)."""
    return all(hasattr(model, name) for name in ("encoder", "masked_lm"))


def _encoder_rows(encoder: keras.Model) -> list[_Row]:
    emb = encoder.embeddings
    rows: list[_Row] = [
        (emb.word_embeddings, "bert/embeddings/word_embeddings", "embeddings.word_embeddings.weight",
         False, False, False),
        (emb.position_embeddings, "bert/embeddings/position_embeddings",
         "embeddings.position_embeddings.weight", False, False, True),
        (emb.token_type_embeddings, "bert/embeddings/token_type_embeddings",
         "embeddings.token_type_embeddings.weight", False, False, True),
    ]
    rows += _layer_norm(emb.layer_norm, "bert/embeddings/LayerNorm", "embeddings.LayerNorm")
    for i, block in enumerate(encoder.transformer_layers):
        g, h = f"bert/encoder/layer_{i}", f"encoder.layer.{i}"
        rows += _dense(block.query, f"{g}/attention/self/query", f"{h}.attention.self.query")
        rows += _dense(block.key, f"{g}/attention/self/key", f"{h}.attention.self.key")
        rows += _dense(block.value, f"{g}/attention/self/value", f"{h}.attention.self.value")
        rows += _dense(block.attention_output, f"{g}/attention/output/dense", f"{h}.attention.output.dense")
        rows += _layer_norm(
            block.attention_layer_norm, f"{g}/attention/output/LayerNorm", f"{h}.attention.output.LayerNorm"
        )
        rows += _dense(block.intermediate, f"{g}/intermediate/dense", f"{h}.intermediate.dense")
        rows += _dense(block.output_dense, f"{g}/output/dense", f"{h}.output.dense")
        rows += _layer_norm(block.output_layer_norm, f"{g}/output/LayerNorm", f"{h}.output.LayerNorm")
    rows += _dense(encoder.pooler.dense, "bert/pooler/dense", "pooler.dense")
    return rows


def _head_rows(model: keras.Model) -> list[_Row]:
    """The MLM head's rows, and the NSP head's when `model` has one."""
    mlm = model.masked_lm
    rows = _dense(mlm.transform, "cls/predictions/transform/dense", "cls.predictions.transform.dense")
    rows += _layer_norm(
        mlm.layer_norm, "cls/predictions/transform/LayerNorm", "cls.predictions.transform.LayerNorm"
    )
    rows += [
        (mlm.output_bias, "cls/predictions/output_bias", "cls.predictions.bias", False, False, False),
    ]
    if not is_pretrainer(model):
        return rows
    nsp = model.next_sentence
    rows += [
        (nsp.dense.kernel, "cls/seq_relationship/output_weights", "cls.seq_relationship.weight",
         True, True, False),
        (nsp.dense.bias, "cls/seq_relationship/output_bias", "cls.seq_relationship.bias", False, False, False),
    ]
    return rows


def weight_specs(model: keras.Model, fmt: str) -> list[WeightSpec]:
    """Every weight of a `BertEncoder`, `BertPretrainer` or `BertMaskedLM` with its checkpoint name in `fmt`.

    Args:
        model: a `BertEncoder`, a `BertPretrainer` (encoder plus MLM and NSP heads) or a
            `BertMaskedLM` (encoder plus MLM head); the MLM decoder is tied to the word
            embeddings and so has no entry of its own.
        fmt: "google" (TF1 variable names) or "hf" (Hugging Face names, without `bert.`).

    Returns:
        One `WeightSpec` per weight, encoder first, in a fixed order.

    Raises:
        TypeError: for any other model (pass e.g. a classifier's `.encoder`).
    """
    encoder = model.encoder if has_masked_lm(model) else model
    if not all(hasattr(encoder, name) for name in ("config", "embeddings", "transformer_layers", "pooler")):
        raise TypeError(
            f"Expected a BertEncoder or BertPretrainer, got {type(model).__name__}; to initialise a "
            "task model, load the checkpoint into its `.encoder`."
        )
    rows = _encoder_rows(encoder) + (_head_rows(model) if encoder is not model else [])
    google = fmt == "google"
    return [WeightSpec(google_name if google else hf_name, variable, google_t if google else hf_t, sliceable)
            for variable, google_name, hf_name, google_t, hf_t, sliceable in rows]
