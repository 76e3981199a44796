"""BertConfig: presets, Google's bert_config.json in and out, and one clear error for bad values."""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keras_bert_lite import BertConfig
from keras_bert_lite.config import ACTIVATIONS, GOOGLE_KEYS, MAX_SIZE, SIZE_FIELDS

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
        ({"initializer_range": math.inf}, "initializer_range"),  # non-finite weights
        ({"layer_norm_eps": math.inf}, "layer_norm_eps"),
        ({"layer_norm_eps": math.nan}, "layer_norm_eps"),
        ({"attention_probs_dropout_prob": math.nan}, "attention_probs_dropout_prob"),
        ({"hidden_size": "768"}, "hidden_size"),
        ({"num_hidden_layers": True}, "num_hidden_layers"),
        ({"type_vocab_size": 2.0}, "type_vocab_size"),
        ({"vocab_size": [30522]}, "vocab_size"),
        ({"max_position_embeddings": None}, "max_position_embeddings"),
        ({"max_position_embeddings": 2**31}, "max_position_embeddings"),
        ({"hidden_dropout_prob": "0.1"}, "hidden_dropout_prob"),
        ({"initializer_range": False}, "initializer_range"),
        ({"hidden_act": ["gelu"]}, "hidden_act"),
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


def test_numpy_numbers_are_stored_as_python_numbers():
    config = BertConfig(hidden_size=np.int64(64), num_attention_heads=np.int32(4), hidden_dropout_prob=np.float32(0.5),
                        initializer_range=1)
    assert type(config.hidden_size) is int and type(config.hidden_dropout_prob) is float
    assert type(config.initializer_range) is float
    assert config == BertConfig(hidden_size=64, num_attention_heads=4, hidden_dropout_prob=0.5, initializer_range=1.0)
    json.dumps(config.to_dict())


@pytest.mark.parametrize(
    "content, message",
    [
        (b"[1, 2]", "expected a JSON object of config fields, got list"),
        (b"null", "expected a JSON object of config fields, got NoneType"),
        (json.dumps(GOOGLE_BASE).encode("utf-16"), r"not UTF-8 text \(it looks like UTF-16\) at byte 0"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (json.dumps({**GOOGLE_BASE, "hidden_size": "768"}).encode(), "hidden_size must be an integer"),
        (json.dumps({**GOOGLE_BASE, "initializer_range": None}).encode(), "initializer_range must be a finite number"),
        (json.dumps({**GOOGLE_BASE, "layer_norm_eps": float("inf")}).encode(), "layer_norm_eps must be a finite"),
        (json.dumps({**GOOGLE_BASE, "hidden_act": "gelu_fast"}).encode(), "hidden_act 'gelu_fast' is unknown"),
        (json.dumps({**GOOGLE_BASE, "hidden_size": 770}).encode(), "hidden_size \\(770\\) must be divisible"),
    ],
)
def test_bad_config_files_name_the_file(tmp_path, content, message):
    path = tmp_path / "bert_config.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"{path}: .*{message}"):
        BertConfig.from_json_file(path)


def test_config_file_edge_cases(tmp_path):
    # Editors on Windows write a byte-order mark; it is not part of the JSON.
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOGLE_BASE).encode())
    assert BertConfig.from_json_file(path) == BertConfig.preset("base")
    with pytest.raises(ValueError, match=f"BERT config file {tmp_path} is a folder"):
        BertConfig.from_json_file(tmp_path)
    with pytest.raises(ValueError, match="built from a dict of fields, got list"):
        BertConfig.from_dict([("hidden_size", 8)])


def test_google_dict_says_only_what_the_original_code_can_read():
    assert BertConfig.preset("tiny").to_google_dict() == {k: getattr(BertConfig.preset("tiny"), k) for k in GOOGLE_KEYS}
    exact = BertConfig.preset("tiny", hidden_act="gelu_exact")
    with pytest.raises(ValueError, match="hidden_act 'gelu_exact' cannot be expressed.*approximate_gelu=True"):
        exact.to_google_dict()
    assert exact.to_google_dict(approximate_gelu=True)["hidden_act"] == "gelu"
    with pytest.raises(ValueError, match="hidden_act 'silu' cannot be expressed"):
        BertConfig.preset("tiny", hidden_act="silu").to_google_dict(approximate_gelu=True)
    with pytest.raises(ValueError, match="layer_norm_eps 1e-05 cannot be expressed.*always uses 1e-12"):
        BertConfig.preset("tiny", layer_norm_eps=1e-5).to_google_dict()


# Property tests: valid configs round-trip exactly; every invalid value is one ValueError naming its field.
finite_positive = st.floats(min_value=0, exclude_min=True, allow_nan=False, allow_infinity=False)
probability = st.floats(min_value=0, max_value=1, exclude_max=True)


@st.composite
def valid_configs(draw):
    heads = draw(st.integers(1, 64))
    return BertConfig(
        vocab_size=draw(st.integers(1, MAX_SIZE)),
        hidden_size=heads * draw(st.integers(1, MAX_SIZE // heads)),
        num_hidden_layers=draw(st.integers(1, MAX_SIZE)),
        num_attention_heads=heads,
        intermediate_size=draw(st.integers(1, MAX_SIZE)),
        hidden_act=draw(st.sampled_from(ACTIVATIONS)),
        hidden_dropout_prob=draw(probability),
        attention_probs_dropout_prob=draw(probability),
        max_position_embeddings=draw(st.integers(1, MAX_SIZE)),
        type_vocab_size=draw(st.integers(1, MAX_SIZE)),
        initializer_range=draw(finite_positive),
        layer_norm_eps=draw(finite_positive),
    )


not_a_number = st.one_of(st.none(), st.booleans(), st.text(max_size=5), st.lists(st.integers(), max_size=2),
                         st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
non_finite = st.sampled_from([math.nan, math.inf, -math.inf])
INVALID_VALUES = {
    **{name: st.one_of(not_a_number, st.integers(max_value=0), st.integers(min_value=MAX_SIZE + 1), st.floats())
       for name in SIZE_FIELDS},
    **{name: st.one_of(not_a_number, non_finite, st.floats(max_value=0, exclude_max=False, allow_nan=False))
       for name in ("initializer_range", "layer_norm_eps")},
    **{name: st.one_of(not_a_number, non_finite, st.floats(max_value=0, exclude_max=True),
                       st.floats(min_value=1, allow_nan=False))
       for name in ("hidden_dropout_prob", "attention_probs_dropout_prob")},
    "hidden_act": st.one_of(not_a_number.filter(lambda v: not isinstance(v, str)),
                            st.text(max_size=12).filter(lambda v: v not in ACTIVATIONS)),
}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("configs")


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=valid_configs())
def test_valid_configs_round_trip_exactly(config, scratch):
    assert BertConfig.from_dict(config.to_dict()) == config
    path = scratch / "bert_config.json"
    config.to_json_file(path)
    assert BertConfig.from_json_file(path) == config


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=valid_configs(), data=st.data())
def test_invalid_values_name_the_field(config, data, scratch):
    field = data.draw(st.sampled_from(sorted(INVALID_VALUES)))
    value = data.draw(INVALID_VALUES[field])
    values = {**config.to_dict(), field: value}
    with pytest.raises(ValueError, match=f"BertConfig.{field} "):
        BertConfig.from_dict(values)
    path = scratch / "bad_config.json"
    path.write_text(json.dumps(values))
    with pytest.raises(ValueError, match=f"{path}: BertConfig.{field} "):
        BertConfig.from_json_file(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=8,
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extra=st.dictionaries(st.sampled_from([*GOOGLE_KEYS, "layer_norm_eps", "directionality"]), json_values),
       document=json_values)
def test_any_json_file_gives_a_config_or_one_value_error(extra, document, scratch):
    """Arbitrary JSON (Google's keys with arbitrary values, or any document) never escapes as
    another exception type."""
    path = scratch / "fuzzed_config.json"
    for content in ({**GOOGLE_BASE, **extra}, document):
        path.write_text(json.dumps(content))
        try:
            BertConfig.from_json_file(path)
        except ValueError as e:
            assert str(e).startswith(f"{path}: ")
