"""tpu/convert_checkpoint.py end to end: Hugging Face folder -> Google release folder -> .keras."""

import os
import pathlib
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


def _run(*flags: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run(
        [sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, timeout=300, env=env
    )


@pytest.mark.slow
def test_hf_to_google_to_keras(tmp_path, real_vocab_file):
    config = transformers.BertConfig(
        vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=40, hidden_act="gelu_new",
    )
    reference = transformers.BertForPreTraining(config).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in reference.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * 0.1)
    hf_dir = tmp_path / "hf"
    reference.save_pretrained(hf_dir)
    with open(real_vocab_file, encoding="utf-8") as f:
        (hf_dir / "vocab.txt").write_text("\n".join(f.read().splitlines()[:120]) + "\n")

    google_dir = tmp_path / "google"
    result = _run(f"--input={hf_dir}", f"--output={google_dir}", "--output_format=google", "--model=pretrainer")
    assert result.returncode == 0, result.stderr[-3000:]
    assert {"bert_config.json", "vocab.txt", "bert_model.ckpt.index"} <= set(os.listdir(google_dir))
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


@pytest.mark.slow
def test_bad_input_fails_with_one_clear_message(tmp_path):
    missing = tmp_path / "no_such_model"
    result = _run(f"--input={missing}", f"--output={tmp_path / 'out.keras'}")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        f"convert_checkpoint: error: --input {missing}: not a .keras file, a Hugging Face folder (config.json), "
        "a Google release folder (bert_config.json) or a checkpoint prefix (.index file)."
    )
    assert not (tmp_path / "out.keras").exists()
