"""The tensors of a Hugging Face folder as saved (`read_hf_weights`), with the file's names until
`normalize_names` brings `BertModel` and `BertForPreTraining` files to one form."""

from __future__ import annotations

import os

import numpy as np
import safetensors
import safetensors.numpy

from keras_bert_lite.config import read_json_file

SAFETENSORS_NAME = "model.safetensors"
SAFETENSORS_INDEX_NAME = "model.safetensors.index.json"
PYTORCH_NAME = "pytorch_model.bin"


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
    single = os.path.join(directory, SAFETENSORS_NAME)
    index = os.path.join(directory, SAFETENSORS_INDEX_NAME)
    pytorch = os.path.join(directory, PYTORCH_NAME)
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
        if name.startswith("bert."):
            name = name[len("bert."):]
        if ".LayerNorm." in name or name.startswith("LayerNorm."):
            name = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        out[name] = value
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
