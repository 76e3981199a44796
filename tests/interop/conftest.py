"""Fixtures for the checkpoint tests: real MiniLM weights, real sentences, and one run of Google's
original BERT code (see original_bert.py) shared by every test that compares against it."""

import dataclasses
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from keras_bert_lite import BertConfig, BertEncoder, BertPretrainer
from keras_bert_lite.interop import (
    load_hf_checkpoint,
    read_hf_config,
    save_google_checkpoint,
)
from keras_bert_lite.models.checkpoint_folder import from_google_checkpoint

# Real sentences: single texts of different lengths (a padded batch) and sentence pairs.
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello!",
    "BERT's checkpoints, released by Google in 2018, are still used to initialise new models.",
    "Zürich's café serves crème brûlée — naïvely priced at 12.50 CHF.",
]
PAIRS = [
    ("How old is the universe?", "Measurements of the cosmic microwave background suggest 13.8 billion years."),
    ("Is it raining?", "No."),
    ("The encoder is post-LayerNorm.", "Each residual branch is followed by layer normalisation and dropout."),
]

# The tiny model that the original code pre-trains for one step (hidden_act "gelu" = tanh GELU).
TINY_ORIGINAL_CONFIG = dict(
    vocab_size=128,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    hidden_act="gelu",
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
    max_position_embeddings=64,
    type_vocab_size=2,
    initializer_range=0.02,
)

HERE = pathlib.Path(__file__).parent


def encoder_feed(arrays: dict) -> dict:
    """Our encoder's inputs from arrays with the original names."""
    return {
        "input_word_ids": arrays["input_ids"],
        "input_mask": arrays["input_mask"],
        "input_type_ids": arrays["segment_ids"],
    }


@pytest.fixture(scope="session")
def feed():
    """`feed(arrays)`: our encoder's inputs from arrays named as in the original code."""
    return encoder_feed


@pytest.fixture(scope="session")
def real_sentences() -> tuple:
    """(SENTENCES, PAIRS)."""
    return SENTENCES, PAIRS


@pytest.fixture(scope="session")
def real_batch(minilm_dir) -> dict:
    """SENTENCES and PAIRS tokenized by Hugging Face's tokenizer, padded to one length (int32)."""
    from transformers import BertTokenizerFast

    tokenizer = BertTokenizerFast.from_pretrained(minilm_dir)
    singles = tokenizer(SENTENCES, return_tensors="np", padding=True)
    pairs = tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS], return_tensors="np", padding=True)
    length = max(singles["input_ids"].shape[1], pairs["input_ids"].shape[1])
    singles = tokenizer(SENTENCES, return_tensors="np", padding="max_length", max_length=length)
    pairs = tokenizer(
        [a for a, _ in PAIRS], [b for _, b in PAIRS], return_tensors="np", padding="max_length", max_length=length
    )
    return {
        "input_ids": np.concatenate([singles["input_ids"], pairs["input_ids"]]).astype("int32"),
        "input_mask": np.concatenate([singles["attention_mask"], pairs["attention_mask"]]).astype("int32"),
        "segment_ids": np.concatenate([singles["token_type_ids"], pairs["token_type_ids"]]).astype("int32"),
    }


@pytest.fixture(scope="session")
def minilm_encoder(minilm_dir) -> BertEncoder:
    """Our BertEncoder with the real all-MiniLM-L6-v2 weights (hidden_act gelu_exact, as in HF)."""
    encoder = BertEncoder(read_hf_config(minilm_dir))
    load_hf_checkpoint(encoder, minilm_dir)
    return encoder


@dataclasses.dataclass
class OriginalRun:
    """Results of one run of the original BERT code.

    minilm_*: the real MiniLM (exact GELU) written as a Google folder by save_google_checkpoint
        (approximate_gelu=True, real vocab.txt): the folder, the inputs, the outputs of the original
        BertModel built from that folder's bert_config.json and checkpoint, ours from
        from_google_checkpoint(folder), and the exact-GELU MiniLM's before conversion.
    tiny_*: a tiny model pre-trained one step by the original code and saved with its Saver:
        config dict, checkpoint prefix, inputs and the original's outputs (incl. MLM/NSP logits).
    """

    minilm_folder: pathlib.Path
    minilm_inputs: dict
    minilm_reference: dict
    minilm_ours: dict
    minilm_exact: dict
    tiny_config: dict
    tiny_checkpoint: str
    tiny_inputs: dict
    tiny_reference: dict


def _tiny_inputs(rng) -> dict:
    batch, seq, predictions, vocab = 4, 24, 6, TINY_ORIGINAL_CONFIG["vocab_size"]
    lengths = np.array([24, 17, 9, 12])
    positions = np.arange(seq)
    mask = (positions[None, :] < lengths[:, None]).astype("int32")
    ids = rng.integers(5, vocab, (batch, seq)).astype("int32") * mask
    segments = ((positions[None, :] >= lengths[:, None] // 2) * mask).astype("int32")
    return {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": segments,
        "masked_lm_positions": np.sort(rng.integers(1, 9, (batch, predictions)), axis=1).astype("int32"),
        "masked_lm_ids": rng.integers(5, vocab, (batch, predictions)).astype("int32"),
        "masked_lm_weights": (rng.random((batch, predictions)) < 0.8).astype("float32"),
        "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype("int32"),
    }


def _encoder_outputs(encoder, batch) -> dict:
    outputs = encoder(encoder_feed(batch))
    return {
        "sequence_output": outputs["sequence_output"].numpy(),
        "pooled_output": outputs["pooled_output"].numpy(),
        **{f"layer_{i}": x.numpy() for i, x in enumerate(outputs["encoder_outputs"])},
    }


@pytest.fixture(scope="session")
def original_run(tmp_path_factory, minilm_dir, minilm_encoder, real_batch) -> OriginalRun:
    work = tmp_path_factory.mktemp("original_bert")
    # Ours -> a Google folder: MiniLM's exact GELU becomes the original's tanh GELU, on request.
    minilm_folder = work / "minilm"
    minilm_ckpt = save_google_checkpoint(
        minilm_encoder, minilm_folder / "bert_model.ckpt", minilm_dir / "vocab.txt", approximate_gelu=True
    )
    converted, _ = from_google_checkpoint(minilm_folder)
    assert converted.config.hidden_act == "gelu"
    np.savez(work / "minilm_inputs.npz", **real_batch)
    tiny_inputs = _tiny_inputs(np.random.default_rng(7))
    np.savez(work / "tiny_inputs.npz", **tiny_inputs)
    jobs = [
        {"job": "restore", "config_file": str(minilm_folder / "bert_config.json"), "checkpoint": minilm_ckpt,
         "inputs": str(work / "minilm_inputs.npz"), "output": str(work / "minilm_reference.npz")},
        {"job": "pretrain", "config": TINY_ORIGINAL_CONFIG, "checkpoint": str(work / "tiny" / "bert_model.ckpt"),
         "inputs": str(work / "tiny_inputs.npz"), "output": str(work / "tiny_reference.npz"), "seed": 3},
    ]
    (work / "jobs.json").write_text(json.dumps(jobs))
    result = subprocess.run(
        [sys.executable, str(HERE / "original_bert.py"), str(work / "jobs.json")],
        capture_output=True, text=True, timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(f"The original BERT code failed:\n{result.stderr[-4000:]}")
    return OriginalRun(
        minilm_folder=minilm_folder,
        minilm_inputs=real_batch,
        minilm_reference=dict(np.load(work / "minilm_reference.npz")),
        minilm_ours=_encoder_outputs(converted, real_batch),
        minilm_exact=_encoder_outputs(minilm_encoder, real_batch),
        tiny_config=TINY_ORIGINAL_CONFIG,
        tiny_checkpoint=str(work / "tiny" / "bert_model.ckpt"),
        tiny_inputs=tiny_inputs,
        tiny_reference=dict(np.load(work / "tiny_reference.npz")),
    )


@pytest.fixture(scope="session")
def tiny_original_pretrainer():
    """`make(**overrides)`: our BertPretrainer with the original tiny model's config."""

    def make(**overrides) -> BertPretrainer:
        return BertPretrainer(BertEncoder(BertConfig.from_dict({**TINY_ORIGINAL_CONFIG, **overrides})))

    return make


# A tiny Hugging Face BERT (3 heads of 8).
HF_TINY = dict(vocab_size=60, hidden_size=24, num_hidden_layers=2, num_attention_heads=3, intermediate_size=40,
               max_position_embeddings=40, type_vocab_size=2)


def _randomize(module, seed):
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in module.named_parameters():
            noise = torch.randn(param.shape, generator=generator) * 0.2
            param.copy_(noise + (1.0 if "LayerNorm.weight" in name else 0.0))


@pytest.fixture(scope="session")
def hf_pretraining(tmp_path_factory, hf_tiny):
    """A random tiny transformers BertForPreTraining (exact GELU) saved with save_pretrained."""
    import transformers

    model = transformers.BertForPreTraining(transformers.BertConfig(**hf_tiny, hidden_act="gelu")).eval()
    _randomize(model, seed=0)
    folder = tmp_path_factory.mktemp("hf_pretraining")
    model.save_pretrained(folder)
    return model, folder


@pytest.fixture(scope="session")
def hf_tiny() -> dict:
    """The tiny Hugging Face BERT's sizes (BertConfig / transformers.BertConfig keyword arguments)."""
    return dict(HF_TINY)


@pytest.fixture(scope="session")
def folder_with():
    """`folder_with(tmp_path, folder, config=None, tensors=None, files=None)`: a copy of `folder`
    with config.json replaced by `config`, model.safetensors by `tensors` and any other file by
    `files` (name -> bytes)."""

    def make(tmp_path, folder, config=None, tensors=None, files=None):
        from safetensors.numpy import save_file

        out = tmp_path / "modified"
        shutil.copytree(folder, out, dirs_exist_ok=True)
        if config is not None:
            (out / "config.json").write_text(json.dumps(config))
        if tensors is not None:
            save_file(tensors, out / "model.safetensors")
        for name, content in (files or {}).items():
            (out / name).write_bytes(content)
        return out

    return make
