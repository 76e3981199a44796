"""tpu/convert_checkpoint.py end to end: Hugging Face folder -> Google release folder -> .keras and back
to a Hugging Face folder that transformers loads; bad input gives one error line."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite import BertPretrainer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tpu" / "convert_checkpoint.py"


def _start(*flags: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen([sys.executable, str(SCRIPT), *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _run(*flags: str) -> subprocess.CompletedProcess:
    process = _start(*flags)
    stdout, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def tiny_hf_dir(tmp_path_factory, real_vocab_file):
    """(transformers BertForPreTraining with tanh GELU, its saved folder with 120 tokens of the real
    vocabulary)."""
    config = transformers.BertConfig(
        vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=40, hidden_act="gelu_new",
    )
    reference = transformers.BertForPreTraining(config).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in reference.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * 0.1)
    hf_dir = tmp_path_factory.mktemp("convert") / "hf"
    reference.save_pretrained(hf_dir)
    with open(real_vocab_file, encoding="utf-8") as f:
        tokens = f.read().splitlines()
    # The special tokens, then the real vocabulary's first 15 words ("the", "of", ...).
    (hf_dir / "vocab.txt").write_text("\n".join(tokens[:105] + tokens[1996:2011]) + "\n")
    return reference, hf_dir


@pytest.mark.slow
def test_hf_to_google_to_keras_to_hf(tmp_path, tiny_hf_dir):
    reference, hf_dir = tiny_hf_dir

    google_dir = tmp_path / "google"
    result = _run(f"--input={hf_dir}", f"--output={google_dir}", "--output_format=google", "--model=pretrainer")
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(os.listdir(google_dir)) == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                                              "bert_model.ckpt.index", "vocab.txt"]
    assert f"Wrote:\n  {google_dir}/bert_model.ckpt.index (" in result.stderr
    shapes = tf.train.load_checkpoint(str(google_dir / "bert_model.ckpt")).get_variable_to_shape_map()
    assert shapes["cls/seq_relationship/output_weights"] == [2, 32]

    keras_file = tmp_path / "bert.keras"
    result = _run(f"--input={google_dir}", f"--output={keras_file}", "--model=pretrainer")
    assert result.returncode == 0, result.stderr[-3000:]
    model = keras.saving.load_model(keras_file)
    assert isinstance(model, BertPretrainer)

    rng = np.random.default_rng(0)
    ids = rng.integers(1, 120, (2, 10)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    segments = (np.arange(10)[None] >= 4).astype("int32") * mask
    positions = np.array([[1, 2, 5], [0, 3, 4]], "int32")
    ours = model({"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": segments,
                  "masked_lm_positions": positions})
    with torch.no_grad():
        expected = reference(input_ids=torch.tensor(ids * mask, dtype=torch.long),
                             attention_mask=torch.tensor(mask, dtype=torch.long),
                             token_type_ids=torch.tensor(segments, dtype=torch.long))
    mlm = expected.prediction_logits.numpy()[np.arange(2)[:, None], positions]
    assert np.max(np.abs(ours["mlm_logits"].numpy() - mlm)) < 1e-4
    assert np.max(np.abs(ours["nsp_logits"].numpy() - expected.seq_relationship_logits.numpy())) < 1e-4

    # A .keras file holds no vocabulary: the Hugging Face folder takes --vocab_file (uncased: no
    # token has a capital) and loads in transformers, tokenizer included.
    hf_again = tmp_path / "hf_again"
    result = _run(f"--input={keras_file}", f"--output={hf_again}", "--output_format=hf",
                  f"--vocab_file={hf_dir / 'vocab.txt'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((hf_again / "tokenizer_config.json").read_text())["do_lower_case"] is True
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_again)
    assert tokenizer.convert_ids_to_tokens(tokenizer("The")["input_ids"]) == ["[CLS]", "the", "[SEP]"]
    again = transformers.BertForPreTraining.from_pretrained(hf_again).eval()
    for name, value in reference.state_dict().items():
        assert torch.equal(again.state_dict()[name], value), name


@pytest.mark.slow
def test_bad_input_fails_with_one_clear_line(tmp_path, tiny_hf_dir, minilm_dir):
    """Each run fails before writing anything, its last stderr line the one error (all run at once;
    flag errors come before TensorFlow is imported)."""
    _, hf_dir = tiny_hf_dir
    no_vocab = tmp_path / "no_vocab"
    shutil.copytree(hf_dir, no_vocab)
    (no_vocab / "vocab.txt").unlink()
    (tmp_path / "a_file").write_text("")
    missing = tmp_path / "no_such_model"
    out = tmp_path / "out"
    cases = {
        (f"--input={missing}", f"--output={out}.keras"):
            f"--input {missing}: not a .keras file, a Hugging Face folder (config.json), a Google release folder "
            "(bert_config.json) or a checkpoint prefix (.index file).",
        (f"--inptu={hf_dir}", f"--output={out}"):
            "Unknown command line flag 'inptu'. Did you mean: input, input_format ?",
        (f"--output={out}",): "flag --input=None: Flag --input must have a value other than None.",
        (f"--input={hf_dir}", f"--output={out}", "--output_format=google", "extra"):
            "unexpected arguments: extra (flags are --name=value).",
        (f"--input={minilm_dir}", f"--output={out}", "--output_format=google"):
            f"--input {minilm_dir} uses the exact (erf) GELU, which Google's original code does not have: pass "
            "--approximate_gelu to write its tanh GELU instead (outputs change slightly; see the README), or convert "
            "with --output_format=hf.",
        (f"--input={no_vocab}", f"--output={out}", "--output_format=google"):
            f"--input {no_vocab} has no vocab.txt: pass --vocab_file so that the google output folder is complete.",
        (f"--input={hf_dir}", f"--output={tmp_path / 'a_file'}", "--output_format=hf"):
            f"--output {tmp_path / 'a_file'} is a file; the hf output is a folder.",
        (f"--input={minilm_dir}", f"--output={out}", "--output_format=hf", "--model=pretrainer"):
            f"{minilm_dir}/model.safetensors does not match the model: missing from the checkpoint (7): "
            "cls.predictions.transform.dense.weight, cls.predictions.transform.dense.bias, "
            "cls.predictions.transform.LayerNorm.weight, cls.predictions.transform.LayerNorm.bias, "
            "cls.predictions.bias, cls.seq_relationship.weight, cls.seq_relationship.bias. "
            "Pass --nostrict to convert what fits.",
    }
    processes = {flags: _start(*flags) for flags in cases}
    for flags, process in processes.items():
        _, stderr = process.communicate(timeout=300)
        assert process.returncode != 0, flags
        assert stderr.strip().splitlines()[-1] == f"convert_checkpoint: error: {cases[flags]}", flags
    assert not out.exists() and not (tmp_path / "out.keras").exists()


@pytest.mark.slow
def test_help_lists_the_scripts_flags():
    result = _run("--help")
    for flag in ("--input:", "--output_format:", "--vocab_file:", "--[no]do_lower_case:", "--[no]approximate_gelu:",
                 "--[no]strict:"):
        assert flag in result.stdout, flag
