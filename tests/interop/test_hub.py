"""Hugging Face Hub names, offline: a hub cache built from the real all-MiniLM-L6-v2 files in the
layout huggingface_hub reads (`models--org--name/snapshots/<commit>/`, `refs/<branch>`)."""

import os
import shutil
import socket
import sys

import huggingface_hub
import numpy as np
import pytest
import torch
from huggingface_hub import constants, file_download
from safetensors.numpy import load_file

from keras_bert_lite.interop.hub import hub_folder
from keras_bert_lite.interop.huggingface import PYTORCH_NAME, SAFETENSORS_NAME, read_hf_weights
from keras_bert_lite.models.checkpoint_folder import find_checkpoint, from_checkpoint
from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.text.preprocessor import BertPreprocessor

NAME = "sentence-transformers/all-MiniLM-L6-v2"
COMMIT = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
FILES = ("config.json", "vocab.txt", "tokenizer_config.json")
TEXTS = ["The quick brown fox jumps over the lazy dog.", "Zürich's café serves crème brûlée."]


def _add_model(cache, name, folder, weights):
    """`name` in the cache at COMMIT (branches main and v1), its files linked from `folder`."""
    repo = cache / f"models--{name.replace('/', '--')}"
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for file in FILES + weights:
        (snapshot / file).symlink_to(folder / file)
    (repo / "refs").mkdir()
    for branch in ("main", "v1"):
        (repo / "refs" / branch).write_text(COMMIT)
    return snapshot


@pytest.fixture
def hub(tmp_path, monkeypatch, minilm_dir):
    """An offline hub cache holding all-MiniLM-L6-v2; records the files asked of huggingface_hub."""
    cache = tmp_path / "hub"
    snapshot = _add_model(cache, NAME, minilm_dir, (SAFETENSORS_NAME,))
    for name, value in (("HF_HUB_OFFLINE", True), ("HF_HUB_CACHE", str(cache))):
        monkeypatch.setenv(name, "1" if value is True else value)
        monkeypatch.setattr(constants, name, value)  # read when huggingface_hub is imported

    def no_network(*args, **kwargs):
        raise AssertionError("HF_HUB_OFFLINE is set, yet the Hub was asked for file metadata")

    monkeypatch.setattr(file_download, "get_hf_file_metadata", no_network)
    requested, download = [], huggingface_hub.hf_hub_download

    def recording_download(repo_id, filename, **kwargs):
        requested.append(filename)
        return download(repo_id, filename, **kwargs)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", recording_download)
    return {"cache": cache, "snapshot": snapshot, "requested": requested}


@pytest.mark.slow
def test_a_hub_name_loads_the_same_encoder_as_its_folder(hub, minilm_dir, minilm_encoder):
    encoder, preprocessor = from_checkpoint(f"hf://{NAME}", seq_length=24)
    assert hub["requested"] == ["config.json", "vocab.txt", SAFETENSORS_NAME, "tokenizer_config.json"]
    inputs = BertPreprocessor(str(minilm_dir / "vocab.txt"), seq_length=24)(TEXTS)
    for name, value in preprocessor(TEXTS).items():
        np.testing.assert_array_equal(value, inputs[name])
    np.testing.assert_array_equal(encoder(inputs, training=False)["sequence_output"],
                                  minilm_encoder(inputs, training=False)["sequence_output"])

    # Every task model's from_checkpoint, with a revision in the name.
    classifier = BertClassifier.from_checkpoint(f"hf://{NAME}@v1", num_classes=2, seq_length=24)
    for ours, reference in zip(classifier.encoder.weights, minilm_encoder.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), reference.numpy())


@pytest.mark.parametrize("name", [f"hf://{NAME}", f"hf://{NAME}@v1", f"hf://{NAME}@{COMMIT}"])
def test_name_forms_find_the_cache_snapshot(hub, name):
    folder = find_checkpoint(name)
    assert (folder.kind, folder.directory) == ("hugging_face", str(hub["snapshot"]))
    assert folder.weights == os.path.join(hub["snapshot"], SAFETENSORS_NAME)
    assert folder.lower_case is True and "tokenizer_config.json" in folder.lower_case_source


def test_without_safetensors_pytorch_model_bin_is_fetched_and_read_weights_only(hub, minilm_dir, tmp_path):
    source = tmp_path / "source"
    shutil.copytree(minilm_dir, source, ignore=shutil.ignore_patterns(SAFETENSORS_NAME))
    tensors = load_file(minilm_dir / SAFETENSORS_NAME)
    torch.save({name: torch.from_numpy(value) for name, value in tensors.items()}, source / PYTORCH_NAME)
    _add_model(hub["cache"], "org/minilm-bin", source, (PYTORCH_NAME,))

    folder = find_checkpoint("hf://org/minilm-bin")
    assert hub["requested"] == ["config.json", "vocab.txt", SAFETENSORS_NAME, PYTORCH_NAME, "tokenizer_config.json"]
    assert folder.weights.endswith(PYTORCH_NAME)
    weights, _ = read_hf_weights(folder.directory)
    assert weights.keys() == tensors.keys()
    for name, value in tensors.items():
        np.testing.assert_array_equal(weights[name], value)


def test_a_name_neither_cached_nor_reachable_is_one_error_naming_it(hub):
    with pytest.raises(FileNotFoundError) as error:
        find_checkpoint("hf://org/missing@v2")
    message = str(error.value)
    for part in ("org/missing at revision v2", "no config.json", str(hub["cache"]), "HF_HUB_OFFLINE"):
        assert part in message
    assert hub["requested"] == ["config.json"]  # one look-up, not one per file


def test_local_paths_stay_local(hub, minilm_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "minilm").symlink_to(minilm_dir)
    folder = find_checkpoint("local/minilm")  # the "org/name" form, but a local folder
    assert folder.directory == "local/minilm" and hub["requested"] == []
    for path in ("local/minilm", NAME, tmp_path / "org" / "name", "gs://bucket/uncased_L-2_H-128_A-2", "/no/such/path"):
        assert hub_folder(path) is None, path


@pytest.fixture
def counting_hub(monkeypatch):
    """The Hub client as a counting stub, online mode, and no network: any socket connection fails."""
    calls = []
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *args, **kwargs: calls.append(args))

    def no_network(*args, **kwargs):
        raise AssertionError(f"a connection was opened: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    return calls


@pytest.mark.parametrize("path", ["out/mine_typo", "all-MiniLM-L6-v3", NAME, f"{NAME}@main"])
def test_a_missing_local_path_fails_at_once_naming_it_without_asking_the_hub(counting_hub, tmp_path, monkeypatch,
                                                                              path):
    monkeypatch.chdir(tmp_path)
    for load in (find_checkpoint, from_checkpoint, lambda p: BertClassifier.from_checkpoint(p, num_classes=2)):
        with pytest.raises(FileNotFoundError) as error:
            load(path)
        message = str(error.value)
        assert message.startswith(f"No checkpoint at {path}: no such file or folder"), message
        assert f"{path}.index" in message and ".keras" in message and "hf://" in message
    assert counting_hub == []


def test_without_huggingface_hub_the_error_says_how_to_install_it(hub, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # as if not installed
    with pytest.raises(ImportError, match=rf"Loading {NAME} from the Hugging Face Hub needs huggingface_hub: "
                                          r"pip install keras_bert_lite\[hub\]"):
        from_checkpoint(f"hf://{NAME}")


@pytest.mark.slow  # loads the real model
def test_a_sentence_transformers_hub_model_brings_its_pooling_and_normalize(hub, minilm_dir):
    from keras_bert_lite.models.sentence_encoder import BertSentenceEncoder

    for name in ("modules.json", "sentence_bert_config.json", "1_Pooling"):
        (hub["snapshot"] / name).symlink_to(minilm_dir / name)
    model = BertSentenceEncoder.from_checkpoint(f"hf://{NAME}")
    assert (model.pooling_modes, model.normalize, model.preprocessor.seq_length) == (("mean",), True, 256)
    fetched = ["modules.json", "sentence_bert_config.json", "1_Pooling/config.json", "2_Normalize/config.json"]
    assert hub["requested"][4:8] == fetched  # after the BERT files; the last one absent, as in the real model
