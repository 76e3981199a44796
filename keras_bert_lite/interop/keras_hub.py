"""KerasHub BERT presets (`config.json` naming `BertBackbone`, `model.weights.h5`, the tokenizer's
`tokenizer.json` and `assets/tokenizer/vocabulary.txt`): read and written without KerasHub.

A preset is how KerasHub keeps a model; `keras_hub.models.BertBackbone.from_preset(folder)` then
runs it on any Keras 3 backend (JAX, PyTorch, TensorFlow). The files are plain: JSON of the
serialized Keras objects, and Keras' HDF5 weights file, whose datasets sit at the paths Keras
gives a model's layers (`layers/transformer_encoder_1/_self_attention_layer/query_dense/vars/0`).
These are read and written here with h5py, so KerasHub is not needed at run time.

Layouts: dense kernels are [in, out] as ours; the attention projections are `EinsumDense`
kernels [hidden, heads, head_size] (query, key, value; biases [heads, head_size]) and
[heads, head_size, hidden] (output), which are ours reshaped. KerasHub's `BertBackbone` always
uses the tanh GELU (our "gelu") and LayerNorm epsilon 1e-12, and one dropout rate.

Example:

    >>> report = load_keras_hub_preset(encoder, "bert_tiny_preset")
    >>> save_keras_hub_preset(encoder, "exported", preprocessor)  # BertBackbone.from_preset loads it
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
from typing import Any

import h5py
import keras
import ml_dtypes
import numpy as np
from absl import logging

from keras_bert_lite.config import BertConfig, read_json_file
from keras_bert_lite.interop.mapping import is_pretrainer, weight_specs
from keras_bert_lite.interop.release import VocabularySource, publishing, resolve_vocabulary
from keras_bert_lite.interop.report import LoadReport, restore_weights
from keras_bert_lite.text import BertPreprocessor, BertTokenizer

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.weights.h5"
TOKENIZER_NAME = "tokenizer.json"
VOCABULARY_PATH = "assets/tokenizer/vocabulary.txt"
PREPROCESSOR_NAME = "preprocessor.json"
TASK_NAME = "task.json"
TASK_WEIGHTS_NAME = "task.weights.h5"
METADATA_NAME = "metadata.json"

BACKBONE_CLASS = "BertBackbone"
# What KerasHub's BertBackbone fixes (not in its config).
_ACTIVATION = "gelu"  # the tanh approximation
_LAYER_NORM_EPS = 1e-12

# Our BertConfig field <- the BertBackbone config field.
_FIELDS = {
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "hidden_size": "hidden_dim",
    "intermediate_size": "intermediate_dim",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "num_segments",
}

# Hugging Face name (as `weight_specs(..., "hf")` gives it) -> dataset under a transformer block.
_BLOCK_PATHS = {
    "attention.self.query": "_self_attention_layer/query_dense",
    "attention.self.key": "_self_attention_layer/key_dense",
    "attention.self.value": "_self_attention_layer/value_dense",
    "attention.output.dense": "_self_attention_layer/output_dense",
    "attention.output.LayerNorm": "_self_attention_layer_norm",
    "intermediate.dense": "_feedforward_intermediate_dense",
    "output.dense": "_feedforward_output_dense",
    "output.LayerNorm": "_feedforward_layer_norm",
}
_TOP_PATHS = {
    "embeddings.word_embeddings": "layers/reversible_embedding",
    "embeddings.position_embeddings": "layers/position_embedding",
    "embeddings.token_type_embeddings": "layers/embedding",
    "embeddings.LayerNorm": "layers/layer_normalization",
    "pooler.dense": "layers/dense",
}
_HEAD_SPLIT = ("query_dense/", "key_dense/", "value_dense/")  # [.., heads, head_size] outputs
_HEAD_MERGE = "_self_attention_layer/output_dense/vars/0"  # [heads, head_size, hidden] kernel


def _dataset_path(hf_name: str) -> str:
    """The `model.weights.h5` dataset of the weight Hugging Face calls `hf_name`."""
    module, _, kind = hf_name.rpartition(".")
    index = "0" if kind == "weight" else "1"  # kernel/embeddings/gamma, then bias/beta
    if module.startswith("encoder.layer."):
        number, _, inner = module.removeprefix("encoder.layer.").partition(".")
        block = "layers/transformer_encoder" + (f"_{number}" if number != "0" else "")
        return f"{block}/{_BLOCK_PATHS[inner]}/vars/{index}"
    return f"{_TOP_PATHS[module]}/vars/{index}"


def _as_ours(path: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of a preset tensor in our layout (attention heads merged into one axis)."""
    if any(part in path for part in _HEAD_SPLIT):
        return (shape[0], math.prod(shape[1:])) if path.endswith("/0") else (math.prod(shape),)
    if path.endswith(_HEAD_MERGE):
        return (math.prod(shape[:-1]), shape[-1])
    return shape


def _as_theirs(path: str, value: np.ndarray, heads: int) -> np.ndarray:
    """Our value in the preset's layout (see `_as_ours`)."""
    if any(part in path for part in _HEAD_SPLIT):
        return value.reshape(value.shape[0], heads, -1) if value.ndim == 2 else value.reshape(heads, -1)
    if path.endswith(_HEAD_MERGE):
        return value.reshape(heads, -1, value.shape[-1])
    return value


@dataclasses.dataclass(frozen=True)
class KerasHubTokenizer:
    """The text settings of a preset's `tokenizer.json` (a KerasHub `BertTokenizer`).

    Attributes:
        lower_case: `lowercase`: lower-case (Unicode case folding) before WordPiece.
        strip_accents: `strip_accents`: drop accents (NFD, then non-spacing marks removed).
        source: the file read, for messages.
    """

    lower_case: bool
    strip_accents: bool
    source: str


def _class_of(values: Any, path: str) -> str:
    if not isinstance(values, dict) or not isinstance(values.get("config"), dict):
        raise ValueError(f"{path}: expected a serialized Keras object (class_name, config).")
    return str(values.get("registered_name") or values.get("class_name"))


def _read_object(path: str, description: str, expected: str) -> dict[str, Any]:
    """The `config` of the serialized Keras object in `path`, which must be a `expected`."""
    values = read_json_file(path, description)
    found = _class_of(values, path)
    if found.rpartition(">")[2] != expected:
        raise ValueError(f"{path} holds a {found}, not a KerasHub {expected}; only BERT presets are read.")
    return values["config"]


def is_keras_hub_preset(names: set[str]) -> bool:
    """Whether a folder holding the files `names` is a KerasHub preset: `config.json` and
    `model.weights.h5` (Hugging Face folders have no `.h5` weights)."""
    return CONFIG_NAME in names and WEIGHTS_NAME in names


def read_keras_hub_config(directory: str | os.PathLike) -> BertConfig:
    """The `BertConfig` of a KerasHub `BertBackbone` preset (`config.json`).

    Raises:
        FileNotFoundError: no `config.json`.
        ValueError: naming the file: it is not a `BertBackbone` (naming the class it holds, e.g.
            `keras_hub>GPT2Backbone`), or a field is missing or invalid.
    """
    path = os.path.join(os.fspath(directory), CONFIG_NAME)
    values = _read_object(path, "KerasHub config", BACKBONE_CLASS)
    missing = [name for name in _FIELDS.values() if name not in values]
    if missing:
        raise ValueError(f"{path}: the BertBackbone config lacks {', '.join(missing)}.")
    dropout = values.get("dropout", 0.1)
    try:
        return BertConfig(
            **{ours: values[theirs] for ours, theirs in _FIELDS.items()},
            hidden_act=_ACTIVATION,
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
            layer_norm_eps=_LAYER_NORM_EPS,
        )
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: {e}") from None


def read_keras_hub_tokenizer(directory: str | os.PathLike) -> KerasHubTokenizer:
    """The casing of a preset's `tokenizer.json` (KerasHub's defaults: `lowercase` False,
    `strip_accents` False).

    Raises:
        FileNotFoundError: no `tokenizer.json`.
        ValueError: naming the file, when it is not a `BertTokenizer` or a setting is not a boolean.
    """
    path = os.path.join(os.fspath(directory), TOKENIZER_NAME)
    values = _read_object(path, "KerasHub tokenizer", "BertTokenizer")
    settings = {name: values.get(name, False) for name in ("lowercase", "strip_accents")}
    for name, value in settings.items():
        if not isinstance(value, bool):
            raise ValueError(f"{path}: {name} must be true or false, got {value!r}.")
    return KerasHubTokenizer(settings["lowercase"], settings["strip_accents"], path)


def _read_datasets(path: str) -> dict[str, np.ndarray]:
    """Every dataset of a Keras `.weights.h5` file by its path, bfloat16 ones as such."""
    out: dict[str, np.ndarray] = {}

    def visit(name: str, item: Any) -> None:
        if isinstance(item, h5py.Dataset):
            value = item[()]
            if item.attrs.get("dtype") == "bfloat16":  # stored as 2-byte opaque values by Keras
                value = np.asarray(value).view(ml_dtypes.bfloat16)
            out[name] = np.asarray(value)

    try:
        with h5py.File(path, "r") as f:
            f.visititems(visit)
    except OSError as e:
        raise ValueError(f"Cannot read {path} as an HDF5 weights file (truncated or corrupt?): {e}") from None
    return out


def _left_out(directory: str) -> list[tuple[int, str]]:
    """(absl log level, note) for what a preset holds besides the backbone and tokenizer: a task's
    head is a warning, the packing length (which `seq_length` replaces) information."""
    notes = []
    task = os.path.join(directory, TASK_NAME)
    if os.path.isfile(task):
        values = read_json_file(task, "KerasHub task config")
        config = values.get("config", {}) if isinstance(values, dict) else {}
        settings = ", ".join(f"{key}={config[key]!r}" for key in ("num_classes", "activation") if key in config)
        weights = f" and its head's weights ({TASK_WEIGHTS_NAME})" if os.path.isfile(
            os.path.join(directory, TASK_WEIGHTS_NAME)) else ""
        notes.append((logging.WARNING, f"the task {_class_of(values, task)}({settings}){weights}"))
    preprocessor = os.path.join(directory, PREPROCESSOR_NAME)
    if os.path.isfile(preprocessor):
        values = read_json_file(preprocessor, "KerasHub preprocessor config")
        config = values.get("config", {}) if isinstance(values, dict) else {}
        notes.append((logging.INFO, f"{PREPROCESSOR_NAME}'s packing (sequence_length="
                      f"{config.get('sequence_length')!r}, truncate={config.get('truncate')!r}; ours packs to the "
                      "seq_length given)"))
    return notes


def load_keras_hub_preset(model: keras.Model, directory: str | os.PathLike, strict: bool = True) -> LoadReport:
    """Loads a KerasHub BERT preset's backbone into a `BertEncoder` (or a `BertPretrainer`'s
    encoder; the preset has no pre-training heads).

    Reads `config.json` and `model.weights.h5`; besides shapes, the settings shapes cannot
    reveal (`num_heads`; KerasHub's fixed tanh GELU and LayerNorm epsilon) must agree with the
    model. Weights are cast to the model's dtype (a bfloat16 preset into a float32 model keeps
    its values exactly). A task preset's head (`task.json`, `task.weights.h5`) and packing
    (`preprocessor.json`) are not loaded; the log says so.

    Returns:
        A `LoadReport`, naming tensors by their path in `model.weights.h5`.

    Raises:
        FileNotFoundError: `config.json` or `model.weights.h5` is missing (naming the path).
        ValueError: naming the file: a preset of another architecture, a file that cannot be
            read, or a tensor that is not floating point or not finite.
        CheckpointMismatchError: (a ValueError) in strict mode, a mismatch.
    """
    directory = os.fspath(directory)
    theirs = read_keras_hub_config(directory)
    encoder = model.encoder if is_pretrainer(model) else model
    source = os.path.join(directory, WEIGHTS_NAME)
    if not os.path.isfile(source):
        raise FileNotFoundError(f"No KerasHub weights in {directory}: expected {WEIGHTS_NAME}.")
    weights = _read_datasets(source)
    specs = [dataclasses.replace(spec, name=_dataset_path(spec.name), transpose=False)
             for spec in weight_specs(encoder, "hf")]
    ours = encoder.config
    mismatches = [
        f"{field} is {getattr(theirs, field)!r} in the preset but {getattr(ours, field)!r} in the model"
        for field in ("num_attention_heads", "hidden_act", "layer_norm_eps")
        if getattr(theirs, field) != getattr(ours, field)
    ]
    report = restore_weights(
        specs,
        {name: _as_ours(name, value.shape) for name, value in weights.items()},
        lambda name: weights[name].reshape(_as_ours(name, weights[name].shape)),
        strict=strict,
        source=source,
        config_mismatches=mismatches,
    )
    for level, note in _left_out(directory):
        logging.log(level, "%s: not loaded: %s.", directory, note)
    return report


def _is_classifier(model: keras.Model) -> bool:
    """Whether `model` is a `BertClassifier` on the pooled output (`pooling="pooler"`): an encoder,
    then dropout and a dense layer on it, as KerasHub's `BertTextClassifier`."""
    head = getattr(model, "classifier", None)
    return hasattr(model, "encoder") and getattr(model, "pooling", None) == "pooler" and hasattr(head, "dense")


def _classifier_weights(dense: keras.layers.Dense) -> bytes:
    """`task.weights.h5` of a `BertTextClassifier`: its `logits` Dense layer, at Keras' path."""
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        for index, variable in enumerate((dense.kernel, dense.bias)):
            f.create_dataset(f"layers/dense/vars/{index}", data=keras.ops.convert_to_numpy(variable))
    return buffer.getvalue()


def _serialized(module: str, class_name: str, config: dict[str, Any]) -> dict[str, Any]:
    """A KerasHub object as Keras serializes it (what `keras.saving.deserialize_keras_object` reads)."""
    return {
        "module": f"keras_hub.src.models.bert.{module}",
        "class_name": class_name,
        "config": config,
        "registered_name": f"keras_hub>{class_name}",
    }


def _dtype_policy(name: str) -> dict[str, Any]:
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name}, "registered_name": None}


def _json(values: dict[str, Any]) -> str:
    return json.dumps(values, indent=4) + "\n"


def save_keras_hub_preset(
    model: keras.Model,
    directory: str | os.PathLike,
    vocabulary: VocabularySource | None = None,
    *,
    lower_case: bool | None = None,
    approximate_gelu: bool = False,
) -> str:
    """Writes a KerasHub BERT preset folder: `BertBackbone.from_preset(folder)` loads the
    encoder, `BertTokenizer.from_preset` and `BertTextClassifierPreprocessor.from_preset` the
    tokenizer and packing, with the outputs ours compute; a `BertClassifier` on the pooled [CLS]
    (the default pooling) is also written as a `BertTextClassifier` (`task.json`,
    `task.weights.h5`: its dense head; KerasHub warns that the file has no optimizer state, which
    a fresh task does not need).

    Files: `model.weights.h5` (in the model's variable dtype, e.g. bfloat16), `config.json`
    (the encoder's dtype policy), `metadata.json`, and with a vocabulary `tokenizer.json`,
    `assets/tokenizer/vocabulary.txt` and `preprocessor.json` (the preprocessor's `seq_length`
    and truncator when `vocabulary` is a `BertPreprocessor`, else KerasHub's default length
    capped at `max_position_embeddings`). Published as by `save_hf_checkpoint`, `config.json`
    last. KerasHub's tokenizer lower-cases by Unicode case folding: text where that differs
    from `str.lower` ("ß", ligatures) is tokenized differently there.

    Args:
        model: a `BertEncoder`, or a model holding one as `.encoder`: a `BertClassifier` (with
            its head, see above), a `BertPretrainer` or another task model (the encoder only,
            with a warning). A task model's `.preprocessor` is the vocabulary when none is given.
        directory: the output folder (created if needed).
        vocabulary: as for `save_hf_checkpoint`; a tokenizer or preprocessor also gives its
            `strip_accents` (else it follows `lower_case`, as in the original BERT).
        lower_case: the tokenizer's `lowercase`; None as in `resolve_vocabulary`.
        approximate_gelu: write a model with the exact (erf) GELU (Hugging Face models such as
            all-MiniLM-L6-v2) as KerasHub's BertBackbone, which has only the tanh GELU; outputs
            change slightly. Without it such a model is refused.

    Returns:
        The folder written.

    Raises:
        TypeError: `model` is not and holds no `BertEncoder`.
        ValueError: before anything is written: an exact-GELU model without `approximate_gelu`,
            a LayerNorm epsilon other than 1e-12, or a vocabulary that does not fit.
    """
    directory = os.fspath(directory)
    encoder = getattr(model, "encoder", model)
    if vocabulary is None:
        vocabulary = getattr(model, "preprocessor", None)
    specs = weight_specs(encoder, "hf")  # TypeError for anything else
    config: BertConfig = encoder.config
    if config.hidden_act != _ACTIVATION and not (config.hidden_act == "gelu_exact" and approximate_gelu):
        raise ValueError(
            f"The model's hidden_act is {config.hidden_act!r}, but KerasHub's BertBackbone has only the tanh GELU "
            "('gelu'); pass approximate_gelu=True to write an exact-GELU model with it (outputs change slightly)."
        )
    if config.layer_norm_eps != _LAYER_NORM_EPS:
        raise ValueError(f"The model's layer_norm_eps is {config.layer_norm_eps}; KerasHub's BertBackbone has 1e-12.")
    if config.attention_probs_dropout_prob != config.hidden_dropout_prob:
        logging.warning("KerasHub's BertBackbone has one dropout rate: writing hidden_dropout_prob=%s.",
                        config.hidden_dropout_prob)
    vocab = None if vocabulary is None else resolve_vocabulary(vocabulary, config, lower_case)
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        for spec in specs:
            path = _dataset_path(spec.name)
            value = _as_theirs(path, keras.ops.convert_to_numpy(spec.variable), config.num_attention_heads)
            dataset = f.create_dataset(path, data=np.ascontiguousarray(value))
            if value.dtype == ml_dtypes.bfloat16:
                dataset.attrs["dtype"] = "bfloat16"  # as Keras marks it
    backbone = _serialized("bert_backbone", BACKBONE_CLASS, {
        "name": "bert_backbone",
        "trainable": True,
        "dtype": _dtype_policy(encoder.dtype_policy.name),
        **{theirs: getattr(config, ours) for ours, theirs in _FIELDS.items()},
        "dropout": config.hidden_dropout_prob,
    })
    metadata = {"keras_version": keras.version(), "parameter_count": int(encoder.count_params()),
                "tasks": ["MaskedLM", "TextClassifier", "TextEmbedder"]}
    files: dict[str, str | bytes] = {}
    if vocab is None:
        logging.warning("No vocabulary given: %s has no tokenizer.", directory)
    else:
        source = vocabulary.tokenizer if isinstance(vocabulary, BertPreprocessor) else vocabulary
        strip_accents = source.strip_accents if isinstance(source, BertTokenizer) else vocab.lower_case
        tokenizer = _serialized("bert_tokenizer", "BertTokenizer", {
            "name": "bert_tokenizer",
            "trainable": True,
            "dtype": _dtype_policy("int32"),
            "config_file": TOKENIZER_NAME,
            "vocabulary": None,
            "sequence_length": None,
            "lowercase": vocab.lower_case,
            "strip_accents": strip_accents,
            "split": True,
            "suffix_indicator": "##",
            "oov_token": "[UNK]",
            "special_tokens": None,
            "special_tokens_in_strings": False,
        })
        packing = isinstance(vocabulary, BertPreprocessor)
        preprocessor = _serialized("bert_text_classifier_preprocessor", "BertTextClassifierPreprocessor", {
            "name": "bert_text_classifier_preprocessor",
            "trainable": True,
            "dtype": _dtype_policy("float32"),
            "tokenizer": tokenizer,
            "config_file": PREPROCESSOR_NAME,
            "sequence_length": vocabulary.seq_length if packing else min(512, config.max_position_embeddings),
            "truncate": vocabulary.packer.truncator if packing else "round_robin",
        })
        files[VOCABULARY_PATH] = vocab.text
        files[TOKENIZER_NAME] = _json(tokenizer)
        files[PREPROCESSOR_NAME] = _json(preprocessor)
    files[WEIGHTS_NAME] = buffer.getvalue()
    if _is_classifier(model):
        files[TASK_WEIGHTS_NAME] = _classifier_weights(model.classifier.dense)
        files[TASK_NAME] = _json(_serialized("bert_text_classifier", "BertTextClassifier", {
            "backbone": backbone,
            "preprocessor": None if vocab is None else preprocessor,
            "name": "bert_text_classifier",
            "num_classes": model.num_classes,
            "activation": model.activation or "linear",
            "dropout": model.classifier.dropout_rate,
        }))
    elif encoder is not model:
        pooled = getattr(model, "pooling", "pooler") != "pooler"  # KerasHub's classifier has no such pooling
        logging.warning("%s: only the encoder of the %s is written%s.", directory, type(model).__name__,
                        f" (KerasHub's BertTextClassifier reads the pooled [CLS], not pooling={model.pooling!r})"
                        if pooled else "")
    files[METADATA_NAME] = _json(metadata)
    files[CONFIG_NAME] = _json(backbone)
    with publishing(directory, files):
        pass
    logging.info("Wrote %s in %s", ", ".join(files), directory)
    return directory
