"""Reading a Hugging Face folder's tensors (read_hf_weights): every unreadable or unusable file is one
error naming it, and nothing is loaded."""

import json
import os
import shutil

import numpy as np
import pytest
import torch

from keras_bert_lite import BertEncoder, BertPretrainer
from keras_bert_lite.interop import CheckpointMismatchError, load_hf_checkpoint, read_hf_config


class _Payload:
    """A pickle that would create a file if unpickling were allowed to run code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.makedirs, (self.marker,))


def test_pytorch_file_cannot_run_code(hf_pretraining, tmp_path):
    _, folder = hf_pretraining
    shutil.copy(folder / "config.json", tmp_path)
    marker = str(tmp_path / "code_ran")
    torch.save({"embeddings.word_embeddings.weight": _Payload(marker)}, tmp_path / "pytorch_model.bin")
    with pytest.raises(ValueError, match="Cannot read .*pytorch_model.bin as a PyTorch state dict"):
        load_hf_checkpoint(BertEncoder(read_hf_config(folder)), tmp_path)
    assert not os.path.exists(marker)


@pytest.mark.parametrize(
    "change, error, message",
    [
        (lambda t: {**t, "embeddings.word_embeddings.weight": t["embeddings.word_embeddings.weight"][:, :5]},
         CheckpointMismatchError, r"embeddings\.word_embeddings\.weight \(checkpoint \[60, 5\] vs model \[60, 24\]\)"),
        (lambda t: {**t, "pooler.dense.bias": t["pooler.dense.bias"].astype("int64")},
         ValueError, r"model\.safetensors: tensor pooler\.dense\.bias has dtype int64; weights must be floating"),
        (lambda t: {**t, "pooler.dense.bias": t["pooler.dense.bias"] * np.float32("nan")},
         ValueError, r"model\.safetensors: tensor pooler\.dense\.bias holds NaN or infinite values"),
        (lambda t: {k: v for k, v in t.items() if "layer.1." not in k},
         CheckpointMismatchError, r"missing from the checkpoint \(16\): encoder\.layer\.1\."),
    ],
)
def test_bad_safetensors_are_named_and_load_nothing(hf_pretraining, folder_with, tmp_path, change, error, message):
    from safetensors.numpy import load_file

    _, folder = hf_pretraining
    tensors = {k.removeprefix("bert."): v for k, v in load_file(folder / "model.safetensors").items()
               if not k.startswith("cls.")}
    modified = folder_with(tmp_path, folder, tensors=change(tensors))
    encoder = BertEncoder(read_hf_config(folder))
    before = [w.numpy().copy() for w in encoder.weights]
    with pytest.raises(error, match=message):
        load_hf_checkpoint(encoder, modified)
    for a, b in zip(before, [w.numpy() for w in encoder.weights]):
        assert np.array_equal(a, b)


def test_bfloat16_safetensors_load(hf_pretraining, folder_with, tmp_path):
    """Many published models are stored in bfloat16: they load, widened exactly to float32."""
    import ml_dtypes
    from safetensors.numpy import load_file

    _, folder = hf_pretraining
    tensors = {k: v.astype(ml_dtypes.bfloat16) for k, v in load_file(folder / "model.safetensors").items()}
    pretrainer = BertPretrainer(BertEncoder(read_hf_config(folder)))
    assert load_hf_checkpoint(pretrainer, folder_with(tmp_path, folder, tensors=tensors)).ok
    word_embeddings = tensors["bert.embeddings.word_embeddings.weight"].astype("float32")
    assert np.array_equal(pretrainer.encoder.embeddings.word_embeddings.numpy(), word_embeddings)


def test_malformed_safetensors_index_is_named(hf_pretraining, tmp_path):
    _, folder = hf_pretraining
    model = BertEncoder(read_hf_config(folder))
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    shutil.copy(folder / "config.json", sharded)
    index = sharded / "model.safetensors.index.json"
    for content, message in (
        (b"[]", "not a safetensors index"),
        (json.dumps({"weight_map": {"pooler.dense.bias": 3}}).encode(), "not a safetensors index"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (json.dumps({"weight_map": {"pooler.dense.bias": "model-00001-of-00002.safetensors"}}).encode(),
         "names the shard model-00001-of-00002.safetensors, which is not in"),
    ):
        index.write_bytes(content)
        with pytest.raises((ValueError, FileNotFoundError), match=message):
            load_hf_checkpoint(model, sharded)


def test_pytorch_file_of_other_objects_is_named(hf_pretraining, tmp_path):
    _, folder = hf_pretraining
    shutil.copy(folder / "config.json", tmp_path)
    torch.save({"pooler.dense.bias": [1.0, 2.0]}, tmp_path / "pytorch_model.bin")
    with pytest.raises(ValueError, match="pytorch_model.bin: entry 'pooler.dense.bias' is a list, not a tensor"):
        load_hf_checkpoint(BertEncoder(read_hf_config(folder)), tmp_path)
