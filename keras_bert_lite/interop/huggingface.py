"""Hugging Face BERT folders (`config.json` + `model.safetensors`): configs, tensors, load, save.

`from_checkpoint` and `from_hf_checkpoint` (`keras_bert_lite.models`) build a model from such a
folder with these functions; names and layouts are in `keras_bert_lite.interop.mapping`. The
tensors are read as saved (`read_hf_weights`), with the file's names until `normalize_names`
brings `BertModel` and `BertForPreTraining` files to one form.

Example:

    >>> report = load_hf_checkpoint(encoder, "all-MiniLM-L6-v2")
    >>> save_hf_checkpoint(encoder, "exported", preprocessor)  # transformers' from_pretrained loads it
"""

from __future__ import annotations

import json
import os
from typing import Any

import keras
import numpy as np
import safetensors
import safetensors.numpy
import tensorflow as tf
from absl import logging

from keras_bert_lite.config import BertConfig, read_json_file
from keras_bert_lite.interop.mapping import has_masked_lm, is_pretrainer, weight_specs
from keras_bert_lite.interop.release import (
    VOCAB_NAME,
    VocabularySource,
    model_config,
    publishing,
    resolve_vocabulary,
)
from keras_bert_lite.interop.report import LoadReport, restore_weights

CONFIG_NAME = "config.json"
TOKENIZER_CONFIG_NAME = "tokenizer_config.json"
SAFETENSORS_NAME = "model.safetensors"
SAFETENSORS_INDEX_NAME = "model.safetensors.index.json"
PYTORCH_NAME = "pytorch_model.bin"
WEIGHT_NAMES = (SAFETENSORS_NAME, SAFETENSORS_INDEX_NAME, PYTORCH_NAME)  # as `read_hf_weights` looks

# Hugging Face `hidden_act` -> ours. HF's "gelu" is the exact erf form; its tanh approximations
# ("gelu_new", "gelu_pytorch_tanh") are BERT's original GELU, our "gelu".
_ACTIVATIONS_FROM_HF = {
    "gelu": "gelu_exact",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "silu",
    "swish": "silu",
}
_ACTIVATIONS_TO_HF = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh", "silu": "silu"}

# transformers.BertConfig's defaults, used for keys a config.json leaves out: the same values as
# `BertConfig`'s, its default activation being named "gelu" (the erf form) there.
_HF_DEFAULTS = BertConfig().to_dict()

# Settings that change the computation without changing any weight's shape.
_SHAPELESS_FIELDS = ("num_attention_heads", "hidden_act", "layer_norm_eps")


def _read_safetensors(path: str) -> dict[str, np.ndarray]:
    try:
        return safetensors.numpy.load_file(path)
    except (safetensors.SafetensorError, OSError, ValueError) as e:
        raise ValueError(f"Cannot read {path} (truncated or corrupt?): {e}") from None


def _read_pytorch(path: str) -> dict[str, np.ndarray]:
    try:
        import torch
    except ImportError:
        raise ImportError(f"{path} is a PyTorch file; reading it needs torch (or use model.safetensors).") from None
    try:
        # weights_only=True: unpickling may only rebuild tensors, never run code.
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises assorted types for bad or unsafe pickles
        raise ValueError(f"Cannot read {path} as a PyTorch state dict: {e}") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path} holds a {type(state).__name__}, not a state dict of tensors.")
    out = {}
    for name, tensor in state.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"{path}: entry {name!r} is a {type(tensor).__name__}, not a tensor.")
        if tensor.dtype == torch.bfloat16:
            tensor = tensor.float()
        out[name] = tensor.detach().numpy()
    return out


def read_hf_weights(directory: str | os.PathLike) -> tuple[dict[str, np.ndarray], str]:
    """Reads all tensors of a Hugging Face folder, as saved (original names, [out, in] weights).

    Looks for `model.safetensors`, then a sharded `model.safetensors.index.json`, then
    `pytorch_model.bin` (only if torch is installed; read with `weights_only=True`).

    Returns:
        (name -> numpy array, path of what was read).

    Raises:
        FileNotFoundError: none of these files exist, or a shard the index names is missing.
        ValueError: naming the file, when it cannot be read.
    """
    directory = os.fspath(directory)
    single, index, pytorch = (os.path.join(directory, name) for name in WEIGHT_NAMES)
    if os.path.isfile(single):
        return _read_safetensors(single), single
    if os.path.isfile(index):
        weight_map = read_json_file(index, "Safetensors index")
        weight_map = weight_map.get("weight_map") if isinstance(weight_map, dict) else None
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise ValueError(
                f"{index}: not a safetensors index (needs a 'weight_map' of tensor name -> file name).")
        weights = {}
        for shard in sorted(set(weight_map.values())):
            path = os.path.join(directory, shard)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{index} names the shard {shard}, which is not in {directory}.")
            weights.update(_read_safetensors(path))
        return weights, index
    if os.path.isfile(pytorch):
        return _read_pytorch(pytorch), pytorch
    raise FileNotFoundError(
        f"No Hugging Face weights in {directory}: expected {SAFETENSORS_NAME}, {SAFETENSORS_INDEX_NAME} "
        f"or {PYTORCH_NAME}."
    )


def normalize_names(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """BertModel and BertForPreTraining names in one form: no `bert.` prefix, LayerNorm
    weight/bias (older files say gamma/beta), without buffers and tied copies."""
    out = {}
    for name, value in weights.items():
        name = name.removeprefix("bert.")
        out[name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")] = value
    out.pop("embeddings.position_ids", None)  # a buffer of 0..P-1, not a weight
    # The MLM decoder is tied to the word embeddings and its bias to cls.predictions.bias; drop
    # the copies some files hold, keep anything that differs so it is reported.
    if "cls.predictions.decoder.bias" in out and "cls.predictions.bias" not in out:
        out["cls.predictions.bias"] = out.pop("cls.predictions.decoder.bias")
    for copy, original in (
        ("cls.predictions.decoder.weight", "embeddings.word_embeddings.weight"),
        ("cls.predictions.decoder.bias", "cls.predictions.bias"),
    ):
        if copy in out and original in out and np.array_equal(out[copy], out[original]):
            del out[copy]
    return out


def bert_config_from_hf(values: dict[str, Any], source: str = CONFIG_NAME) -> BertConfig:
    """Converts a Hugging Face BERT `config.json` dict into a `BertConfig`.

    Keys a `config.json` leaves out take `transformers.BertConfig`'s defaults, as in `transformers`.

    Raises:
        ValueError: naming `source` (and the field): not a JSON object, a model that is not a BERT
            with absolute positions, an activation we do not implement, or an invalid value.
    """
    if not isinstance(values, dict):
        raise ValueError(f"{source}: expected a JSON object of config fields, got {type(values).__name__}.")
    model_type = values.get("model_type", "bert")
    if model_type != "bert":
        raise ValueError(f"{source}: model_type {model_type!r} is not a BERT model ('bert').")
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ValueError(f"{source}: position_embedding_type {position_type!r} is not supported (only 'absolute').")
    fields = {key: values.get(key, default) for key, default in _HF_DEFAULTS.items()}
    if not isinstance(fields["hidden_act"], str) or fields["hidden_act"] not in _ACTIVATIONS_FROM_HF:
        raise ValueError(
            f"{source}: hidden_act {fields['hidden_act']!r} is not supported; expected one of "
            f"{sorted(_ACTIVATIONS_FROM_HF)}."
        )
    fields["hidden_act"] = _ACTIVATIONS_FROM_HF[fields["hidden_act"]]
    try:
        return BertConfig(**fields)
    except ValueError as e:
        raise ValueError(f"{source}: {e}") from None


def hf_config_from_bert(config: BertConfig, architecture: str = "BertModel") -> dict[str, Any]:
    """A Hugging Face `config.json` dict for `config` (`architecture`: BertModel or BertForPreTraining)."""
    values = config.to_dict()
    values["hidden_act"] = _ACTIVATIONS_TO_HF[config.hidden_act]
    values.update(
        architectures=[architecture], model_type="bert", position_embedding_type="absolute", pad_token_id=0
    )
    return values


def read_hf_config(directory: str | os.PathLike) -> BertConfig:
    """Reads `directory/config.json` as a `BertConfig` (see `bert_config_from_hf`).

    Raises:
        FileNotFoundError: no `config.json` in `directory`.
        ValueError: `directory` is a file, or `config.json` is not a valid BERT config (naming it).
    """
    directory = os.fspath(directory)
    if os.path.isfile(directory):
        raise ValueError(f"{directory} is a file; expected a Hugging Face model folder (config.json, model.safetensors).")
    path = os.path.join(directory, CONFIG_NAME)
    return bert_config_from_hf(read_json_file(path, "Hugging Face config"), source=path)


def load_hf_checkpoint(model: keras.Model, directory: str | os.PathLike, strict: bool = True) -> LoadReport:
    """Loads a Hugging Face BERT folder into a `BertEncoder` or `BertPretrainer`, as
    `load_google_checkpoint` loads Google's (`model`, `strict` and the sliced tables alike).

    Reads `config.json` and the weights `read_hf_weights` finds, with `BertModel` or
    `BertForPreTraining` names (with or without `bert.`). Besides shapes, the settings shapes
    cannot reveal (`num_attention_heads`, `hidden_act` with HF's "gelu" = our "gelu_exact",
    `layer_norm_eps`) must agree with `config.json`.

    Returns:
        A `LoadReport` (names as in the file, without `bert.`).

    Raises:
        FileNotFoundError: `config.json` or the weights are missing (naming the path).
        ValueError: naming the file (and tensor), when a file cannot be read or a tensor is not
            floating point or holds NaN or infinite values.
        CheckpointMismatchError: (a ValueError) in strict mode, a mismatch.
    """
    theirs, ours = read_hf_config(directory), model_config(model)
    weights, source = read_hf_weights(directory)
    weights = normalize_names(weights)
    mismatches = [
        f"{field} is {getattr(theirs, field)!r} in {CONFIG_NAME} but {getattr(ours, field)!r} in the model"
        for field in _SHAPELESS_FIELDS
        if getattr(theirs, field) != getattr(ours, field)
    ]
    return restore_weights(
        weight_specs(model, "hf"),
        {name: value.shape for name, value in weights.items()},
        weights.__getitem__,
        strict=strict,
        source=source,
        config_mismatches=mismatches,
    )


def read_hf_lower_case(directory: str | os.PathLike) -> bool:
    """`do_lower_case` of a Hugging Face folder's `tokenizer_config.json`; True (transformers'
    default) without one.

    Raises:
        ValueError: naming the file, when it is not a JSON object with a boolean `do_lower_case`.
    """
    path = os.path.join(os.fspath(directory), TOKENIZER_CONFIG_NAME)
    if not os.path.isfile(path):
        return True
    values = read_json_file(path, "Tokenizer config")
    lower_case = values.get("do_lower_case", True) if isinstance(values, dict) else None
    if not isinstance(lower_case, bool):
        raise ValueError(f"{path}: expected a JSON object whose do_lower_case is true or false.")
    return lower_case


def save_hf_checkpoint(
    model: keras.Model,
    directory: str | os.PathLike,
    vocabulary: VocabularySource | None = None,
    *,
    lower_case: bool | None = None,
) -> str:
    """Writes a Hugging Face folder that `transformers` loads, model and tokenizer.

    Files: `model.safetensors`, `vocab.txt`, `tokenizer_config.json` (a `BertTokenizer` with
    `do_lower_case`) and `config.json`, so `transformers.AutoTokenizer.from_pretrained(folder)` and
    `BertModel.from_pretrained(folder)` (or `BertForPreTraining`) work, as does
    `from_hf_checkpoint(folder)`. A `BertEncoder` is written as a `BertModel` (unprefixed names); a
    `BertPretrainer` as a `BertForPreTraining` (`bert.*` plus `cls.*`; the tied decoder is not
    duplicated), a `BertMaskedLM` as a `BertForMaskedLM` (`bert.*`, pooler included, plus
    `cls.predictions.*`), which `transformers.pipeline("fill-mask", model=folder)` loads. Files are published as by `save_google_checkpoint`, `config.json` last. Hugging
    Face's tokenizer always turns words over 100 characters into `[UNK]` (as ours does by default).

    Args:
        model, vocabulary, lower_case: as for `save_google_checkpoint` (`lower_case` is
            `do_lower_case`); without a vocabulary no tokenizer files are written.
        directory: output folder (local or `tf.io.gfile`; created if needed).

    Returns:
        The folder written.

    Raises:
        TypeError: `model` is not a `BertEncoder`, `BertPretrainer` or `BertMaskedLM`.
        ValueError: before anything is written, when the vocabulary does not fit the model.
    """
    directory = os.fspath(directory)
    heads = has_masked_lm(model)
    specs = weight_specs(model, "hf")
    config = model_config(model)
    architecture = "BertForPreTraining" if is_pretrainer(model) else "BertForMaskedLM" if heads else "BertModel"
    hf_config = hf_config_from_bert(config, architecture)
    vocab = None if vocabulary is None else resolve_vocabulary(vocabulary, config, lower_case)
    tensors = {}
    for spec in specs:
        value = keras.ops.convert_to_numpy(spec.variable)
        name = spec.name if not heads or spec.name.startswith("cls.") else "bert." + spec.name
        tensors[name] = np.ascontiguousarray(value.T if spec.transpose else value)
    files = {SAFETENSORS_NAME: safetensors.numpy.save(tensors, metadata={"format": "pt"})}
    if vocab is None:
        if not tf.io.gfile.exists(os.path.join(directory, VOCAB_NAME)):
            logging.warning("No vocabulary given: %s has no %s or tokenizer files.", directory, VOCAB_NAME)
    else:
        hf_config["pad_token_id"] = vocab.tokens.index("[PAD]")
        files[VOCAB_NAME] = vocab.text
        # transformers' BertTokenizer; strip_accents None means "as do_lower_case", as ours does.
        files[TOKENIZER_CONFIG_NAME] = json.dumps({
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": vocab.lower_case,
            "strip_accents": None,
            "tokenize_chinese_chars": True,
            "model_max_length": config.max_position_embeddings,
            "unk_token": "[UNK]",
            "sep_token": "[SEP]",
            "pad_token": "[PAD]",
            "cls_token": "[CLS]",
            "mask_token": "[MASK]",
        }, indent=2, sort_keys=True) + "\n"
    files[CONFIG_NAME] = json.dumps(hf_config, indent=2, sort_keys=True) + "\n"
    with publishing(directory, files):
        pass
    logging.info("Wrote %s in %s", ", ".join(files), directory)
    return directory
