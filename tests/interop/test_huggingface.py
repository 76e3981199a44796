"""Hugging Face BERT folders against Hugging Face `transformers` (PyTorch, CPU)."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert_lite import BertConfig, BertEncoder, BertPreprocessor, BertPretrainer
from keras_bert_lite.interop import (
    CheckpointMismatchError,
    bert_config_from_hf,
    hf_config_from_bert,
    load_hf_checkpoint,
    read_hf_config,
    read_hf_lower_case,
    save_google_checkpoint,
    save_hf_checkpoint,
)
from keras_bert_lite.interop.mapping import weight_specs
from keras_bert_lite.layers.activations import get_activation
from keras_bert_lite.models.checkpoint_folder import from_hf_checkpoint

TOLERANCE = 1e-4


def _max_diff(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)))


def _torch_inputs(arrays) -> dict:
    return {
        "input_ids": torch.tensor(arrays["input_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(arrays["input_mask"], dtype=torch.long),
        "token_type_ids": torch.tensor(arrays["segment_ids"], dtype=torch.long),
    }


# Real weights.


@pytest.mark.slow
def test_minilm_matches_transformers(minilm_dir, minilm_encoder, real_batch, feed):
    reference = transformers.BertModel.from_pretrained(minilm_dir).eval()
    with torch.no_grad():
        expected = reference(**_torch_inputs(real_batch))
    ours = minilm_encoder(feed(real_batch))
    real = real_batch["input_mask"].astype(bool)
    expected_sequence = expected.last_hidden_state.numpy()
    sequence_diff = np.abs(ours["sequence_output"].numpy() - expected_sequence)
    # Padding rows feed nothing (they are masked out as keys) and are numerically touchy:
    # compared relative to their magnitude.
    padding_diff = (sequence_diff / (1.0 + np.abs(expected_sequence)))[~real].max()
    pooled_diff = _max_diff(ours["pooled_output"], expected.pooler_output.numpy())
    print(
        f"MiniLM vs transformers.BertModel, max |diff|: sequence_output {sequence_diff[real].max():.3g} "
        f"on real tokens ({padding_diff:.3g} relative on padding), pooled_output {pooled_diff:.3g}"
    )
    assert (~real).any() and real_batch["segment_ids"].max() == 1
    assert sequence_diff[real].max() < TOLERANCE and pooled_diff < TOLERANCE and padding_diff < TOLERANCE


@pytest.mark.slow
def test_from_hf_checkpoint_strings_to_outputs(minilm_dir, real_sentences):
    encoder, preprocessor = from_hf_checkpoint(minilm_dir, seq_length=48)
    assert preprocessor.tokenizer.lower_case  # do_lower_case in tokenizer_config.json
    sentences, pairs = real_sentences
    tokenizer = transformers.BertTokenizerFast.from_pretrained(minilm_dir)
    reference = transformers.BertModel.from_pretrained(minilm_dir).eval()
    for texts, ours in (
        (dict(text=sentences), preprocessor(tf.constant(sentences))),
        (dict(text=[a for a, _ in pairs], text_pair=[b for _, b in pairs]),
         preprocessor((tf.constant([a for a, _ in pairs]), tf.constant([b for _, b in pairs])))),
    ):
        hf = tokenizer(**texts, padding="max_length", max_length=48, return_tensors="np")
        assert np.array_equal(ours["input_word_ids"].numpy(), hf["input_ids"])
        with torch.no_grad():
            expected = reference(**{k: torch.tensor(v) for k, v in hf.items()})
        outputs = encoder(ours)
        assert _max_diff(outputs["sequence_output"], expected.last_hidden_state.numpy()) < TOLERANCE
        assert _max_diff(outputs["pooled_output"], expected.pooler_output.numpy()) < TOLERANCE


@pytest.mark.slow
def test_hf_to_google_roundtrip_is_bitwise(minilm_dir, minilm_encoder, tmp_path):
    prefix = save_google_checkpoint(minilm_encoder, tmp_path / "bert_model.ckpt", approximate_gelu=True)
    reader = tf.train.load_checkpoint(prefix)
    written = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    from safetensors.numpy import load_file

    original = load_file(os.path.join(minilm_dir, "model.safetensors"))
    del original["embeddings.position_ids"]
    google_names = {spec.name for spec in weight_specs(minilm_encoder, "google")}
    assert set(written) == google_names and len(written) == len(original)
    for google, hf in zip(weight_specs(minilm_encoder, "google"), weight_specs(minilm_encoder, "hf")):
        value = original[hf.name].T if hf.transpose else original[hf.name]
        assert np.array_equal(written[google.name], value), google.name


# Tiny models written by transformers.

@pytest.fixture(scope="module")
def tiny_batch(hf_tiny):
    rng = np.random.default_rng(1)
    mask = np.ones((3, 12), "int32")
    mask[1, 7:] = 0
    mask[2, 4:] = 0
    return {
        "input_ids": rng.integers(1, hf_tiny["vocab_size"], (3, 12)).astype("int32") * mask,
        "input_mask": mask,
        "segment_ids": (np.arange(12)[None] >= 5).astype("int32") * mask,
        "masked_lm_positions": np.array([[1, 3, 6], [0, 2, 5], [1, 2, 3]], "int32"),
    }


def _hf_pretraining_logits(model, batch):
    with torch.no_grad():
        out = model(**_torch_inputs(batch))
    positions = torch.tensor(batch["masked_lm_positions"], dtype=torch.long)
    mlm = torch.gather(out.prediction_logits, 1, positions[..., None].expand(-1, -1, out.prediction_logits.shape[-1]))
    return mlm.numpy(), out.seq_relationship_logits.numpy()


def _our_pretraining_logits(pretrainer, batch, feed):
    out = pretrainer({**feed(batch), "masked_lm_positions": batch["masked_lm_positions"]})
    return out["mlm_logits"].numpy(), out["nsp_logits"].numpy()


@pytest.mark.slow
def test_bert_for_pretraining_safetensors(hf_pretraining, tiny_batch, feed):
    model, folder = hf_pretraining
    pretrainer = BertPretrainer(BertEncoder(read_hf_config(folder)))
    assert pretrainer.encoder.config.hidden_act == "gelu_exact"
    report = load_hf_checkpoint(pretrainer, folder)
    assert report.ok and report.source.endswith("model.safetensors")
    for ours, theirs in zip(_our_pretraining_logits(pretrainer, tiny_batch, feed),
                            _hf_pretraining_logits(model, tiny_batch)):
        assert _max_diff(ours, theirs) < TOLERANCE


@pytest.mark.slow
def test_pytorch_bin_with_tied_decoder(hf_pretraining, tiny_batch, tmp_path, feed):
    model, folder = hf_pretraining
    shutil.copy(folder / "config.json", tmp_path)
    state = model.state_dict()
    assert "cls.predictions.decoder.weight" in state
    torch.save(state, tmp_path / "pytorch_model.bin")
    pretrainer = BertPretrainer(BertEncoder(read_hf_config(tmp_path)))
    report = load_hf_checkpoint(pretrainer, tmp_path)
    assert report.ok and report.source.endswith("pytorch_model.bin")
    for ours, theirs in zip(_our_pretraining_logits(pretrainer, tiny_batch, feed),
                            _hf_pretraining_logits(model, tiny_batch)):
        assert _max_diff(ours, theirs) < TOLERANCE


@pytest.mark.slow
def test_save_hf_checkpoint_loads_in_transformers(tiny_batch, tmp_path, feed, hf_tiny):
    pretrainer = BertPretrainer(BertEncoder(BertConfig(**hf_tiny, hidden_act="gelu")))  # tanh GELU
    rng = np.random.default_rng(2)
    for weight in pretrainer.weights:
        weight.assign(rng.normal(0, 0.2, weight.shape).astype("float32"))
    save_hf_checkpoint(pretrainer, tmp_path / "pretrainer")
    assert json.loads((tmp_path / "pretrainer" / "config.json").read_text())["hidden_act"] == "gelu_new"
    model = transformers.BertForPreTraining.from_pretrained(tmp_path / "pretrainer").eval()
    for ours, theirs in zip(_our_pretraining_logits(pretrainer, tiny_batch, feed),
                            _hf_pretraining_logits(model, tiny_batch)):
        assert _max_diff(ours, theirs) < TOLERANCE
    save_hf_checkpoint(pretrainer.encoder, tmp_path / "encoder")
    model = transformers.BertModel.from_pretrained(tmp_path / "encoder").eval()
    with torch.no_grad():
        expected = model(**_torch_inputs(tiny_batch))
    ours = pretrainer.encoder(feed(tiny_batch))
    assert _max_diff(ours["sequence_output"], expected.last_hidden_state.numpy()) < TOLERANCE
    assert _max_diff(ours["pooled_output"], expected.pooler_output.numpy()) < TOLERANCE


@pytest.mark.parametrize("hf_name", ["gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "tanh", "silu", "swish"])
def test_activation_names_match_transformers(hf_name):
    ours = get_activation(bert_config_from_hf({"hidden_act": hf_name}).hidden_act)
    x = np.linspace(-6, 6, 2001, dtype="float32")
    expected = transformers.activations.ACT2FN[hf_name](torch.tensor(x)).numpy()
    assert _max_diff(ours(tf.constant(x)), expected) < 1e-6


# Errors.


def test_encoder_from_pretraining_folder_strict_and_not(hf_pretraining):
    _, folder = hf_pretraining
    encoder = BertEncoder(read_hf_config(folder))
    with pytest.raises(CheckpointMismatchError, match=r"unexpected in the checkpoint \(7\): cls\.predictions\.bias"):
        load_hf_checkpoint(encoder, folder)
    report = load_hf_checkpoint(encoder, folder, strict=False)
    assert all(name.startswith("cls.") for name in report.unexpected) and not report.missing


def test_wrong_config_named(hf_pretraining, tmp_path, hf_tiny):
    _, folder = hf_pretraining
    with pytest.raises(CheckpointMismatchError,
                       match=r"embeddings\.word_embeddings\.weight \(checkpoint \[60, 24\] vs model \[60, 48\]\)"):
        load_hf_checkpoint(BertEncoder(BertConfig(**{**hf_tiny, "hidden_size": 48}, hidden_act="gelu_exact")), folder)
    # Settings that no shape reveals are compared with config.json.
    wrong_heads = BertEncoder(BertConfig(**{**hf_tiny, "num_attention_heads": 2}, hidden_act="gelu_exact"))
    with pytest.raises(CheckpointMismatchError, match="num_attention_heads is 3 in config.json but 2 in the model"):
        load_hf_checkpoint(wrong_heads, folder, strict=True)


def test_missing_and_truncated_files(hf_pretraining, tmp_path):
    _, folder = hf_pretraining
    model = BertEncoder(read_hf_config(folder))
    with pytest.raises(FileNotFoundError, match=f"Hugging Face config not found: {tmp_path}/config.json"):
        load_hf_checkpoint(model, tmp_path)
    shutil.copy(folder / "config.json", tmp_path)
    with pytest.raises(FileNotFoundError, match=f"No Hugging Face weights in {tmp_path}: expected model.safetensors"):
        load_hf_checkpoint(model, tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (tmp_path / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"Cannot read .*model\.safetensors \(truncated or corrupt\?\)"):
        load_hf_checkpoint(model, tmp_path)
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        from_hf_checkpoint(folder)


def test_not_a_bert_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta", "hidden_size": 24}))
    with pytest.raises(ValueError, match=f"{tmp_path}/config.json: model_type 'roberta' is not a BERT"):
        read_hf_config(tmp_path)
    with pytest.raises(ValueError, match="hidden_act 'quick_gelu' is not supported"):
        bert_config_from_hf({"hidden_act": "quick_gelu"})


@pytest.mark.parametrize(
    "config, error",
    [
        ([1, 2], r"config\.json: expected a JSON object of config fields, got list"),
        ({"model_type": "bert", "hidden_size": "24"}, r"config\.json: BertConfig\.hidden_size must be an integer"),
        ({"num_hidden_layers": 2.0}, r"config\.json: BertConfig\.num_hidden_layers must be an integer"),
        ({"layer_norm_eps": None}, r"config\.json: BertConfig\.layer_norm_eps must be a finite number"),
        ({"hidden_act": ["gelu"]}, r"config\.json: hidden_act \['gelu'\] is not supported"),
    ],
)
def test_malformed_config_json_is_named(hf_pretraining, folder_with, tmp_path, config, error):
    _, folder = hf_pretraining
    with pytest.raises(ValueError, match=error):
        from_hf_checkpoint(folder_with(tmp_path, folder, config=config))


def test_config_json_missing_fields_take_transformers_defaults(hf_pretraining, folder_with, tmp_path):
    """As in transformers, a missing key is its default (hidden_size 768), which the weights then
    contradict: the error names the tensors."""
    _, folder = hf_pretraining
    config = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if k != "hidden_size"}
    with pytest.raises(CheckpointMismatchError, match=r"word_embeddings\.weight \(checkpoint \[60, 24\] vs model "
                                                      r"\[60, 768\]\)"):
        modified = folder_with(tmp_path, folder, config=config)
        load_hf_checkpoint(BertPretrainer(BertEncoder(read_hf_config(modified))), modified)


def test_malformed_folders_are_named(hf_pretraining, folder_with, tmp_path):
    _, folder = hf_pretraining
    with pytest.raises(ValueError, match="model.safetensors is a file; expected a Hugging Face model folder"):
        read_hf_config(folder / "model.safetensors")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=f"Hugging Face config not found: {empty}/config.json"):
        from_hf_checkpoint(empty)
    vocab = (folder / "config.json").read_bytes()  # any bytes: the tokenizer config is read first
    bad_tokenizer = folder_with(tmp_path, folder, files={"vocab.txt": vocab,
                                                           "tokenizer_config.json": b'{"do_lower_case": "false"}'})
    with pytest.raises(ValueError, match="tokenizer_config.json: expected a JSON object whose do_lower_case is true"):
        from_hf_checkpoint(bad_tokenizer)


@pytest.mark.slow
def test_saved_folder_loads_in_transformers_with_its_tokenizer(minilm_dir, minilm_encoder, real_sentences, tmp_path):
    """The real MiniLM written with its preprocessor: transformers' AutoTokenizer and BertModel
    load the folder alone and give the original model's ids and outputs; so does
    from_hf_checkpoint."""
    # The folder's preprocessor as from_hf_checkpoint reads it (its encoder is the session's minilm_encoder).
    preprocessor = BertPreprocessor(os.path.join(minilm_dir, "vocab.txt"), seq_length=64,
                                    lower_case=read_hf_lower_case(minilm_dir))
    folder = save_hf_checkpoint(minilm_encoder, tmp_path / "minilm", preprocessor)
    assert sorted(os.listdir(folder)) == ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"]
    sentences, pairs = real_sentences
    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    original_tokenizer = transformers.AutoTokenizer.from_pretrained(minilm_dir)
    for texts in ((sentences,), (firsts, seconds)):
        ids = tokenizer(*texts, padding="max_length", max_length=64, return_tensors="np")
        assert np.array_equal(ids["input_ids"], original_tokenizer(*texts, padding="max_length", max_length=64,
                                                                  return_tensors="np")["input_ids"])
        ours = preprocessor(tuple(tf.constant(t) for t in texts) if len(texts) > 1 else tf.constant(texts[0]))
        assert np.array_equal(ids["input_ids"], ours["input_word_ids"].numpy())
    model = transformers.BertModel.from_pretrained(folder).eval()
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = model(**batch)
    outputs = minilm_encoder({"input_word_ids": batch["input_ids"].numpy().astype("int32"),
                              "input_mask": batch["attention_mask"].numpy().astype("int32"),
                              "input_type_ids": batch["token_type_ids"].numpy().astype("int32")})
    assert _max_diff(outputs["pooled_output"], expected.pooler_output.numpy()) < TOLERANCE
    reloaded, reloaded_preprocessor = from_hf_checkpoint(folder, seq_length=64)
    assert reloaded_preprocessor.tokenizer.lower_case and reloaded.config == minilm_encoder.config
    for a, b in zip(reloaded.weights, minilm_encoder.weights):
        assert np.array_equal(a.numpy(), b.numpy())


# A cased vocabulary: no real one ships on this machine, so the real uncased words plus capitalised forms.
CASED_WORDS = ["the", "The", "cat", "Cat", "sat", "Sat", "on", "mat", "Mat", "hello", "Hello", "##s", ".", "!"]
CASED_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *CASED_WORDS]


@pytest.mark.slow
@pytest.mark.parametrize("lower_case", [False, True])
def test_casing_reaches_transformers(tmp_path, lower_case, hf_tiny):
    encoder = BertEncoder(BertConfig(**{**hf_tiny, "vocab_size": 40}, hidden_act="gelu"))
    folder = save_hf_checkpoint(encoder, tmp_path / "tiny", BertPreprocessor(CASED_VOCAB, lower_case=lower_case))
    assert json.loads((tmp_path / "tiny" / "tokenizer_config.json").read_text())["do_lower_case"] is lower_case
    texts = ["The Cat sat on the Mat.", "Hello cats!"]
    hf = transformers.AutoTokenizer.from_pretrained(folder)(texts)["input_ids"]
    _, preprocessor = from_hf_checkpoint(folder, seq_length=16)
    assert preprocessor.tokenizer.lower_case is lower_case
    ours = preprocessor(tf.constant(texts))
    assert [row[: len(ids)] for row, ids in zip(ours["input_word_ids"].numpy().tolist(), hf)] == hf
    assert (CASED_VOCAB.index("The") in hf[0]) is not lower_case


def test_interrupted_save_keeps_the_previous_folder(tmp_path, monkeypatch, hf_tiny):
    encoder = BertEncoder(BertConfig(**{**hf_tiny, "vocab_size": 40}, hidden_act="gelu"))
    folder = tmp_path / "tiny"
    save_hf_checkpoint(encoder, folder, CASED_VOCAB)
    before = {name: (folder / name).read_bytes() for name in os.listdir(folder)}
    original_gfile = tf.io.gfile.GFile

    def gfile_failing_on_config(path, mode="r"):
        if "config.json" in os.path.basename(path) and "w" in mode:
            raise OSError("disk full")  # after model.safetensors and vocab.txt were written
        return original_gfile(path, mode)

    monkeypatch.setattr(tf.io.gfile, "GFile", gfile_failing_on_config)
    with pytest.raises(OSError, match="disk full"):
        save_hf_checkpoint(BertEncoder(BertConfig(**{**hf_tiny, "vocab_size": 50}, hidden_act="relu")), folder,
                           CASED_VOCAB + ["extra"])
    assert {name: (folder / name).read_bytes() for name in os.listdir(folder)} == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)
HF_KEYS = ["model_type", "position_embedding_type", "hidden_act", "hidden_size", "num_attention_heads",
           "num_hidden_layers", "intermediate_size", "vocab_size", "layer_norm_eps", "hidden_dropout_prob",
           "max_position_embeddings", "type_vocab_size", "initializer_range", "attention_probs_dropout_prob"]


@settings(deadline=None)
@given(values=st.dictionaries(st.sampled_from(HF_KEYS), json_values) | json_values)
def test_any_config_json_gives_a_config_or_one_value_error(values):
    """Arbitrary JSON as a Hugging Face config.json never escapes as another exception type."""
    try:
        config = bert_config_from_hf(values, source="fuzzed/config.json")
    except ValueError as e:
        assert str(e).startswith("fuzzed/config.json: ")
    else:
        assert bert_config_from_hf(hf_config_from_bert(config)) == config
