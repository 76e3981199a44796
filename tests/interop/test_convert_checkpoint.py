"""tpu/convert_checkpoint.py end to end: Hugging Face folder -> Google release folder -> .keras and back
to a Hugging Face folder that transformers loads; bad input gives one error line. The first conversion
and one bad input run in fresh processes (exit codes, no traceback, no cuInit line); the others call
the script in this process."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

from keras_bert_lite import BertPretrainer, tf_startup
from tests.examples import scripts

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tpu" / "convert_checkpoint.py"


def _fresh_process(*flags: str) -> subprocess.CompletedProcess:
    """The script in a new process, with the environment of a user's shell (no TF_* the tests set)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, env=env,
                          timeout=300)


def _run(capfd, *flags: str) -> subprocess.CompletedProcess:
    """The script run in this process (`main` through its `run` entry)."""
    code, stdout, stderr = scripts.run_script(SCRIPT, capfd, *flags)
    return subprocess.CompletedProcess(flags, code, stdout, stderr)


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
def test_hf_to_google_to_keras_to_hf(tmp_path, tiny_hf_dir, capfd):
    reference, hf_dir = tiny_hf_dir

    google_dir = tmp_path / "google"
    result = _fresh_process(f"--input={hf_dir}", f"--output={google_dir}", "--output_format=google",
                            "--model=pretrainer")
    assert result.returncode == 0, result.stderr[-3000:]
    if tf_startup.cuda_driver_missing():
        assert "cuInit" not in result.stderr, result.stderr[-3000:]
    assert sorted(os.listdir(google_dir)) == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                                              "bert_model.ckpt.index", "vocab.txt"]
    assert f"Wrote:\n  {google_dir}/bert_model.ckpt.index (" in result.stderr
    shapes = tf.train.load_checkpoint(str(google_dir / "bert_model.ckpt")).get_variable_to_shape_map()
    assert shapes["cls/seq_relationship/output_weights"] == [2, 32]

    keras_file = tmp_path / "bert.keras"
    result = _run(capfd, f"--input={google_dir}", f"--output={keras_file}", "--model=pretrainer")
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
    result = _run(capfd, f"--input={keras_file}", f"--output={hf_again}", "--output_format=hf",
                  f"--vocab_file={hf_dir / 'vocab.txt'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((hf_again / "tokenizer_config.json").read_text())["do_lower_case"] is True
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_again)
    assert tokenizer.convert_ids_to_tokens(tokenizer("The")["input_ids"]) == ["[CLS]", "the", "[SEP]"]
    again = transformers.BertForPreTraining.from_pretrained(hf_again).eval()
    for name, value in reference.state_dict().items():
        assert torch.equal(again.state_dict()[name], value), name


def test_bad_input_fails_with_one_clear_line(tmp_path, tiny_hf_dir, minilm_dir, capfd):
    """Each run fails before writing anything, with one error line: missing, unreadable (a folder
    given as a file: chmod does not stop root) and malformed inputs, and bad flags."""
    _, hf_dir = tiny_hf_dir
    no_vocab = tmp_path / "no_vocab"
    shutil.copytree(hf_dir, no_vocab)
    (no_vocab / "vocab.txt").unlink()
    bad_config = tmp_path / "bad_config"
    shutil.copytree(hf_dir, bad_config)
    (bad_config / "config.json").write_text('{"hidden_size": 32,')
    (tmp_path / "a_file").write_text("")
    (tmp_path / "text.keras").write_text("not a zip archive")
    (tmp_path / "folder.keras").mkdir()
    missing = tmp_path / "no_such_model"
    out = tmp_path / "out"
    cases = {
        (f"--input={missing}", f"--output={out}.keras"):
            f"--input {missing}: not a .keras file, a Hugging Face folder (config.json), a KerasHub preset "
            "(config.json and model.weights.h5), a Google release folder (bert_config.json) or a checkpoint prefix "
            "(.index file).",
        (f"--inptu={hf_dir}", f"--output={out}"):
            "Unknown command line flag 'inptu'. Did you mean: input, input_format ?",
        (f"--output={out}",): "flag --input=None: Flag --input must have a value other than None.",
        (f"--input={hf_dir}", f"--output={out}", "--output_format=google", "extra"):
            "unexpected arguments: extra (flags are --name=value).",
        (f"--input={minilm_dir}", f"--output={out}", "--output_format=google"):
            f"--input {minilm_dir} uses the exact (erf) GELU, which Google's original code does not have: pass "
            "--approximate_gelu to write its tanh GELU instead (outputs change slightly; see docs/interop.md), or convert "
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
    patterns = {  # messages from Keras, Python and TensorFlow: the file and what is wrong with it
        (f"--input={tmp_path / 'text.keras'}", f"--output={out}", "--output_format=hf"):
            rf"^--input {tmp_path}/text\.keras: cannot load it as a Keras model: ",
        (f"--input={tmp_path / 'folder.keras'}", f"--output={out}", "--output_format=hf"):
            rf"^--input {tmp_path}/folder\.keras: file not found\.$",
        (f"--input={bad_config}", f"--output={out}", "--output_format=google"): rf"{bad_config}/config\.json",
        (f"--input={hf_dir}", f"--output={out}", "--output_format=google", f"--vocab_file={tmp_path / 'none.txt'}"):
            rf"{tmp_path}/none\.txt",
        (f"--input={hf_dir}", f"--output={out}", "--output_format=google", f"--vocab_file={tmp_path}"):
            rf"{tmp_path}.*([Ff]older|[Dd]irectory)",
    }
    for flags, expected in {**cases, **patterns}.items():
        error = scripts.one_error(SCRIPT, capfd, *flags)
        assert error == expected if flags in cases else re.search(expected, error), (flags, error)
    assert not out.exists() and not (tmp_path / "out.keras").exists()


@pytest.mark.slow
def test_in_a_fresh_process_bad_input_is_one_line_and_exit_code_1(tmp_path):
    result = _fresh_process(f"--input={tmp_path / 'none'}", f"--output={tmp_path / 'out'}", "--output_format=hf")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].startswith(f"convert_checkpoint.py: error: --input {tmp_path}/none: ")
    if tf_startup.cuda_driver_missing():
        assert "cuInit" not in result.stderr, result.stderr[-3000:]
    assert not (tmp_path / "out").exists()


def test_help_lists_the_scripts_flags(capfd, monkeypatch):
    out = scripts.help_text(SCRIPT, capfd, monkeypatch)
    for flag in ("--input:", "--output_format:", "--vocab_file:", "--[no]do_lower_case:", "--[no]approximate_gelu:",
                 "--[no]strict:"):
        assert flag in out, flag
