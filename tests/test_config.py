import json

import pytest

from keras_bert_lite import BertConfig

GOOGLE_BASE = {
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "type_vocab_size": 2,
    "vocab_size": 30522,
}


@pytest.mark.parametrize(
    "name, layers, hidden, heads",
    [("tiny", 2, 128, 2), ("mini", 4, 256, 4), ("small", 4, 512, 8), ("medium", 8, 512, 8),
     ("base", 12, 768, 12), ("large", 24, 1024, 16)],
)
def test_presets(name, layers, hidden, heads):
    config = BertConfig.preset(name)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (layers, hidden, heads)
    assert config.intermediate_size == 4 * hidden
    assert config.head_size == 64
    assert (config.vocab_size, config.max_position_embeddings, config.type_vocab_size) == (30522, 512, 2)
    assert (config.hidden_dropout_prob, config.attention_probs_dropout_prob) == (0.1, 0.1)
    assert (config.hidden_act, config.layer_norm_eps, config.initializer_range) == ("gelu", 1e-12, 0.02)


def test_preset_overrides():
    assert BertConfig.preset("tiny", vocab_size=100).vocab_size == 100


def test_reads_googles_bert_config_json(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({**GOOGLE_BASE, "directionality": "bidi", "pooler_fc_size": 768}))
    assert BertConfig.from_json_file(path) == BertConfig.preset("base")


def test_json_round_trip_uses_googles_keys(tmp_path):
    config = BertConfig.preset("mini", hidden_act="relu", type_vocab_size=16)
    path = tmp_path / "bert_config.json"
    config.to_json_file(path)
    written = json.loads(path.read_text())
    assert {k: written[k] for k in GOOGLE_BASE} == {k: getattr(config, k) for k in GOOGLE_BASE}
    assert BertConfig.from_json_file(path) == config


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"hidden_size": 100}, "hidden_size"),  # 100 is not divisible by 12 heads
        ({"hidden_act": "swish2"}, "hidden_act"),
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"vocab_size": -5}, "vocab_size"),
        ({"intermediate_size": 2.5}, "intermediate_size"),
        ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
        ({"initializer_range": 0}, "initializer_range"),
    ],
)
def test_invalid_config_names_the_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        BertConfig(**overrides)


def test_unknown_preset():
    with pytest.raises(ValueError, match="preset 'huge'"):
        BertConfig.preset("huge")


def test_config_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        BertConfig.from_json_file(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{\n  'hidden_size': 1\n}")
    with pytest.raises(ValueError, match="bad.json.*line 2"):
        BertConfig.from_json_file(bad)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({k: v for k, v in GOOGLE_BASE.items() if k != "vocab_size"}))
    with pytest.raises(ValueError, match="vocab_size"):
        BertConfig.from_json_file(partial)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**GOOGLE_BASE, "num_attention_heads": 7}))
    with pytest.raises(ValueError, match="wrong.json.*num_attention_heads"):
        BertConfig.from_json_file(wrong)
    with pytest.raises(ValueError, match="hidden_szie"):
        BertConfig.from_dict({"hidden_szie": 8})
