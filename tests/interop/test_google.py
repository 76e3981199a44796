"""Google TF1 checkpoints against Google's original BERT code (bert-tensorflow 1.0.4)."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert_lite import BertConfig, BertEncoder, BertPreprocessor, BertPretrainer, pretraining_losses
from keras_bert_lite.config import GOOGLE_KEYS
from keras_bert_lite.interop import (
    CheckpointMismatchError,
    load_google_checkpoint,
    resolve_checkpoint_prefix,
    save_google_checkpoint,
)
from keras_bert_lite.interop.mapping import weight_specs
from keras_bert_lite.models.checkpoint_folder import from_google_checkpoint

TOLERANCE = 1e-4


def _max_diff(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)))


def _pretrainer_outputs(pretrainer, inputs, feed):
    outputs = pretrainer({**feed(inputs), "masked_lm_positions": inputs["masked_lm_positions"]})
    encoded = pretrainer.encoder(feed(inputs))
    vocab = outputs["mlm_logits"].shape[-1]
    return {
        "mlm_logits": outputs["mlm_logits"].numpy().reshape(-1, vocab),
        "nsp_logits": outputs["nsp_logits"].numpy(),
        "sequence_output": encoded["sequence_output"].numpy(),
        "pooled_output": encoded["pooled_output"].numpy(),
    }


def _checkpoint_tensors(prefix) -> dict:
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def _model_weights(model) -> list:
    return [w.numpy().copy() for w in model.weights]


# Against the original code.


def _diffs_on_real_tokens(ours: dict, reference: dict, mask: np.ndarray) -> tuple[dict, dict]:
    """Max |diff| per output on real tokens, and relative to magnitude on padding rows (which feed
    nothing, being masked out as keys, and are numerically touchy)."""
    real = mask.astype(bool)
    diffs, padding_diffs = {}, {}
    for name in sorted(reference):
        diff = np.abs(ours[name] - reference[name])
        diffs[name] = float(diff[real].max() if diff.ndim == 3 else diff.max())
        if diff.ndim == 3:
            padding_diffs[name] = float((diff / (1.0 + np.abs(reference[name])))[~real].max())
    return diffs, padding_diffs


@pytest.mark.slow
def test_original_modeling_restores_our_folder(original_run):
    """MiniLM's real weights written by save_google_checkpoint, read by the original
    BertConfig.from_json_file and restored by the original BertModel via
    tf.train.init_from_checkpoint (every variable found), give the outputs of our
    from_google_checkpoint of the same folder."""
    ref, ours = original_run.minilm_reference, original_run.minilm_ours
    assert set(ref) == set(ours)
    diffs, padding_diffs = _diffs_on_real_tokens(ours, ref, original_run.minilm_inputs["input_mask"])
    print(f"original modeling.py vs ours on MiniLM (tanh GELU), max |diff| on real tokens: {diffs}; "
          f"relative on padding: {padding_diffs}")
    assert max(diffs.values()) < TOLERANCE, diffs
    assert max(padding_diffs.values()) < TOLERANCE, padding_diffs


# The README states this bound for approximate_gelu on all-MiniLM-L6-v2.
APPROXIMATE_GELU_BOUND = 1e-2


@pytest.mark.slow
def test_approximate_gelu_changes_minilm_outputs_by_the_stated_bound(original_run):
    """The original code, running the folder written with approximate_gelu=True, against the
    exact-GELU MiniLM it came from: a real but small change (measured for the README)."""
    mask = original_run.minilm_inputs["input_mask"]
    diffs, _ = _diffs_on_real_tokens(original_run.minilm_reference, original_run.minilm_exact, mask)
    # all-MiniLM-L6-v2 is a sentence-embedding model: mean-pooled, normalised sequence outputs.
    approximate, exact = (
        (outputs["sequence_output"] * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        for outputs in (original_run.minilm_reference, original_run.minilm_exact)
    )
    cosines = (approximate * exact).sum(1) / np.linalg.norm(approximate, axis=1) / np.linalg.norm(exact, axis=1)
    print(f"approximate_gelu on MiniLM, max |diff| on real tokens (original modeling.py vs exact GELU): {diffs}; "
          f"sentence-embedding cosines: {cosines.min():.7f} to {cosines.max():.7f}")
    assert 10 * TOLERANCE < max(diffs.values()) < APPROXIMATE_GELU_BOUND, diffs
    assert cosines.min() > 0.9999


@pytest.mark.slow
def test_original_tokenization_reads_our_folder(original_run, real_sentences, import_original_bert):
    """The folder's vocab.txt, read by the original FullTokenizer, gives the ids of the
    preprocessor from_google_checkpoint builds (the folder's casing inferred from its vocabulary)."""
    tokenization = import_original_bert("tokenization")
    folder = original_run.minilm_folder
    reference = tokenization.FullTokenizer(str(folder / "vocab.txt"), do_lower_case=True)
    _, preprocessor = from_google_checkpoint(folder, seq_length=64)
    assert preprocessor.tokenizer.lower_case
    sentences, pairs = real_sentences
    texts = sentences + [text for pair in pairs for text in pair]
    expected = [reference.convert_tokens_to_ids(reference.tokenize(text)) for text in texts]
    assert preprocessor.tokenizer(tf.constant(texts)).to_list() == expected


@pytest.mark.slow
def test_original_pretraining_checkpoint_loads_into_pretrainer(original_run, tiny_original_pretrainer, feed):
    saved = tf.train.load_checkpoint(original_run.tiny_checkpoint).get_variable_to_shape_map()
    # A real pre-training checkpoint: optimizer slots and the step counter are in it.
    assert "global_step" in saved and "bert/embeddings/word_embeddings/adam_m" in saved
    pretrainer = tiny_original_pretrainer()
    report = load_google_checkpoint(pretrainer, original_run.tiny_checkpoint)
    assert report.ok and not report.sliced
    assert set(report.loaded) == {spec.name for spec in weight_specs(pretrainer, "google")}
    ours = _pretrainer_outputs(pretrainer, original_run.tiny_inputs, feed)
    diffs = {name: _max_diff(ours[name], original_run.tiny_reference[name]) for name in ours}
    print(f"original run_pretraining.py heads vs ours, max |diff|: {diffs}")
    assert max(diffs.values()) < TOLERANCE, diffs
    # The losses: run_pretraining.py's get_masked_lm_output / get_next_sentence_output losses on
    # the same batch (prediction slots of weight 0 among them). Tolerance: float32 sums of O(1-10).
    inputs = original_run.tiny_inputs
    outputs = pretrainer({**feed(inputs), "masked_lm_positions": inputs["masked_lm_positions"]})
    total, mlm_loss, nsp_loss = (float(v) for v in pretraining_losses(inputs, outputs))
    expected_mlm, expected_nsp = (float(original_run.tiny_reference[name]) for name in ("mlm_loss", "nsp_loss"))
    assert 0.0 in inputs["masked_lm_weights"]
    np.testing.assert_allclose([mlm_loss, nsp_loss, total], [expected_mlm, expected_nsp, expected_mlm + expected_nsp],
                               rtol=1e-5)


@pytest.mark.slow
def test_google_roundtrip_is_bitwise(original_run, tiny_original_pretrainer, tmp_path):
    pretrainer = tiny_original_pretrainer()
    load_google_checkpoint(pretrainer, original_run.tiny_checkpoint)
    prefix = save_google_checkpoint(pretrainer, tmp_path / "again" / "bert_model.ckpt")
    original = {
        name: value
        for name, value in _checkpoint_tensors(original_run.tiny_checkpoint).items()
        if name != "global_step" and not name.endswith(("/adam_m", "/adam_v"))
    }
    written = _checkpoint_tensors(prefix)
    assert sorted(written) == sorted(original)
    for name, value in original.items():
        assert written[name].dtype == value.dtype and written[name].shape == value.shape, name
        assert np.array_equal(written[name], value), name


@pytest.mark.slow
def test_encoder_from_pretraining_checkpoint(original_run, feed):
    encoder = BertEncoder(BertConfig.from_dict(original_run.tiny_config))
    with pytest.raises(CheckpointMismatchError, match="unexpected in the checkpoint.*cls/predictions/output_bias"):
        load_google_checkpoint(encoder, original_run.tiny_checkpoint)
    report = load_google_checkpoint(encoder, original_run.tiny_checkpoint, strict=False)
    assert report.unexpected and all(name.startswith("cls/") for name in report.unexpected)
    assert not report.missing and not report.mismatched
    outputs = encoder(feed(original_run.tiny_inputs))
    assert _max_diff(outputs["sequence_output"], original_run.tiny_reference["sequence_output"]) < TOLERANCE
    assert _max_diff(outputs["pooled_output"], original_run.tiny_reference["pooled_output"]) < TOLERANCE


@pytest.mark.slow
def test_larger_position_table_is_sliced(original_run, tiny_original_pretrainer, feed):
    """The checkpoint has 64 positions; a 32-position model takes the first 32 rows."""
    pretrainer = tiny_original_pretrainer(max_position_embeddings=32)
    report = load_google_checkpoint(pretrainer, original_run.tiny_checkpoint)
    assert report.sliced == (("bert/embeddings/position_embeddings", (64, 32), (32, 32)),)
    ours = _pretrainer_outputs(pretrainer, original_run.tiny_inputs, feed)
    for name, value in ours.items():
        assert _max_diff(value, original_run.tiny_reference[name]) < TOLERANCE, name


def _release_folder(root, name, original_run, real_vocab_file):
    folder = root / name
    folder.mkdir()
    for path in tf.io.gfile.glob(original_run.tiny_checkpoint + ".*"):
        shutil.copy(path, folder)
    BertConfig.from_dict(original_run.tiny_config).to_json_file(folder / "bert_config.json")
    with open(real_vocab_file, encoding="utf-8") as f:
        words = f.read().splitlines()[1996 : 1996 + original_run.tiny_config["vocab_size"] - 5]
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    return folder


@pytest.mark.slow
def test_from_google_checkpoint_release_folder(original_run, real_vocab_file, tmp_path, feed):
    folder = _release_folder(tmp_path, "uncased_L-2_H-32_A-4", original_run, real_vocab_file)
    pretrainer, preprocessor = from_google_checkpoint(folder, model="pretrainer", seq_length=24)
    assert isinstance(pretrainer, BertPretrainer) and preprocessor.tokenizer.lower_case
    ours = _pretrainer_outputs(pretrainer, original_run.tiny_inputs, feed)
    for name, value in ours.items():
        assert _max_diff(value, original_run.tiny_reference[name]) < TOLERANCE, name
    packed = preprocessor(tf.constant(["The Time"]))
    assert packed["input_word_ids"].shape == (1, 24)
    # The encoder ignores the pre-training heads; the folder name decides the casing.
    cased = _release_folder(tmp_path, "cased_L-2_H-32_A-4", original_run, real_vocab_file)
    encoder, preprocessor = from_google_checkpoint(cased, seq_length=64)
    assert isinstance(encoder, BertEncoder) and not preprocessor.tokenizer.lower_case
    outputs = encoder(feed(original_run.tiny_inputs))
    assert _max_diff(outputs["pooled_output"], original_run.tiny_reference["pooled_output"]) < TOLERANCE


# Errors and edge cases.

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "##s", "."]
TINY = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
            max_position_embeddings=32)


def _random_pretrainer(seed=0, **overrides) -> BertPretrainer:
    pretrainer = BertPretrainer(BertEncoder(BertConfig(**{**TINY, **overrides})))
    rng = np.random.default_rng(seed)
    for weight in pretrainer.weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    return pretrainer


@pytest.fixture(scope="module")
def saved_tiny(tmp_path_factory):
    """(pretrainer, prefix) of a random tiny pretrainer written with save_google_checkpoint."""
    pretrainer = _random_pretrainer()
    prefix = save_google_checkpoint(pretrainer, tmp_path_factory.mktemp("tiny") / "bert_model.ckpt")
    return pretrainer, prefix


def test_save_writes_original_names_and_shapes(saved_tiny):
    pretrainer, prefix = saved_tiny
    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    assert shapes["cls/seq_relationship/output_weights"] == [2, 16]
    assert shapes["bert/encoder/layer_1/intermediate/dense/kernel"] == [16, 24]
    assert shapes["cls/predictions/output_bias"] == [50]
    assert len(shapes) == len(pretrainer.weights)
    # No vocabulary was given: the checkpoint and its config, nothing else (no temporaries).
    assert sorted(os.listdir(os.path.dirname(prefix))) == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                                                          "bert_model.ckpt.index"]
    assert BertConfig.from_json_file(os.path.join(os.path.dirname(prefix), "bert_config.json")) == pretrainer.encoder.config


def test_save_writes_a_complete_folder(saved_tiny, tmp_path):
    pretrainer, _ = saved_tiny
    folder = tmp_path / "tiny_google"
    save_google_checkpoint(pretrainer, folder / "bert_model.ckpt", BertPreprocessor(TINY_VOCAB))
    assert sorted(os.listdir(folder)) == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                                          "bert_model.ckpt.index", "vocab.txt"]
    assert (folder / "vocab.txt").read_text() == "".join(f"{token}\n" for token in TINY_VOCAB)
    # Only Google's keys: the original code has no layer_norm_eps (its layer norm fixes 1e-12).
    assert sorted(json.loads((folder / "bert_config.json").read_text())) == sorted(GOOGLE_KEYS)
    loaded, preprocessor = from_google_checkpoint(folder, model="pretrainer", seq_length=16)
    assert preprocessor.tokenizer.vocabulary == TINY_VOCAB and preprocessor.tokenizer.lower_case
    for a, b in zip(_model_weights(loaded), _model_weights(pretrainer)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"hidden_act": "gelu_exact"}, "hidden_act 'gelu_exact' cannot be expressed.*Pass approximate_gelu=True"),
        ({"hidden_act": "silu"}, r"hidden_act 'silu' cannot be expressed .* knows only \('gelu', 'relu', 'tanh'\)\.$"),
        ({"layer_norm_eps": 1e-6}, "layer_norm_eps 1e-06 cannot be expressed"),
    ],
)
def test_config_the_original_cannot_run_is_refused_before_writing(tmp_path, overrides, message):
    model = _random_pretrainer(**overrides)
    with pytest.raises(ValueError, match=message):
        save_google_checkpoint(model, tmp_path / "out" / "bert_model.ckpt", TINY_VOCAB, approximate_gelu=True
                               if overrides.get("hidden_act") == "silu" else False)
    assert not (tmp_path / "out").exists()


def test_checkpoint_paths_accepted(saved_tiny, tmp_path):
    _, prefix = saved_tiny
    for path in (prefix, prefix + ".index", prefix + ".data-00000-of-00001", os.path.dirname(prefix)):
        assert resolve_checkpoint_prefix(path) == prefix
    fresh = _random_pretrainer(seed=1)
    load_google_checkpoint(fresh, os.path.dirname(prefix))
    for a, b in zip(_model_weights(fresh), _model_weights(saved_tiny[0])):
        assert np.array_equal(a, b)


def test_segment_table_is_sliced(saved_tiny):
    pretrainer, prefix = saved_tiny
    model = _random_pretrainer(seed=1, type_vocab_size=1, max_position_embeddings=20)
    report = load_google_checkpoint(model, prefix)
    assert {name for name, _, _ in report.sliced} == {
        "bert/embeddings/position_embeddings", "bert/embeddings/token_type_embeddings"}
    tables = _checkpoint_tensors(prefix)
    embeddings = model.encoder.embeddings
    assert np.array_equal(embeddings.token_type_embeddings.numpy(), tables["bert/embeddings/token_type_embeddings"][:1])
    assert np.array_equal(embeddings.position_embeddings.numpy(), tables["bert/embeddings/position_embeddings"][:20])


def test_wrong_config_names_shape_mismatches_and_loads_nothing(saved_tiny):
    _, prefix = saved_tiny
    model = _random_pretrainer(seed=2, hidden_size=32)
    before = _model_weights(model)
    with pytest.raises(CheckpointMismatchError) as error:
        load_google_checkpoint(model, prefix)
    message = str(error.value)
    assert prefix in message and "shape mismatch" in message
    assert "bert/embeddings/word_embeddings (checkpoint [50, 16] vs model [50, 32])" in message
    assert ("cls/seq_relationship/output_weights", (2, 16), (2, 32)) in error.value.report.mismatched
    for a, b in zip(before, _model_weights(model)):
        assert np.array_equal(a, b)
    # Non-strict: what fits (tensors sized by V, I or 2 only) is loaded, the rest reported.
    report = load_google_checkpoint(model, prefix, strict=False)
    assert set(report.loaded) == {
        "bert/encoder/layer_0/intermediate/dense/bias",
        "bert/encoder/layer_1/intermediate/dense/bias",
        "cls/predictions/output_bias",
        "cls/seq_relationship/output_bias",
    }


def test_layer_count_mismatch_names_missing_and_unexpected(saved_tiny):
    _, prefix = saved_tiny
    with pytest.raises(CheckpointMismatchError, match=r"missing from the checkpoint \(16\): "
                                                      r"bert/encoder/layer_2/attention/self/query/kernel"):
        load_google_checkpoint(_random_pretrainer(num_hidden_layers=3), prefix)
    with pytest.raises(CheckpointMismatchError, match=r"unexpected in the checkpoint \(16\): "
                                                      r"bert/encoder/layer_1/attention/output/LayerNorm/beta"):
        load_google_checkpoint(_random_pretrainer(num_hidden_layers=1), prefix)


def test_pretrainer_from_encoder_only_checkpoint(saved_tiny, tmp_path):
    pretrainer, _ = saved_tiny
    prefix = save_google_checkpoint(pretrainer.encoder, tmp_path / "encoder.ckpt")
    model = _random_pretrainer(seed=3)
    with pytest.raises(CheckpointMismatchError, match="missing from the checkpoint.*cls/predictions/transform"):
        load_google_checkpoint(model, prefix)
    report = load_google_checkpoint(model, prefix, strict=False)
    heads = [spec.name for spec in weight_specs(model, "google") if spec.name.startswith("cls/")]
    assert list(report.missing) == heads and not report.unexpected
    assert np.array_equal(model.encoder.embeddings.word_embeddings.numpy(),
                          pretrainer.encoder.embeddings.word_embeddings.numpy())


def test_missing_files(tmp_path, saved_tiny):
    with pytest.raises(FileNotFoundError, match=r"nowhere/bert_model\.ckpt\.index does not exist"):
        load_google_checkpoint(_random_pretrainer(), tmp_path / "nowhere" / "bert_model.ckpt")
    with pytest.raises(FileNotFoundError, match=f"No TF checkpoint in directory {tmp_path}"):
        load_google_checkpoint(_random_pretrainer(), tmp_path)
    for name in ("a.ckpt", "b.ckpt"):
        save_google_checkpoint(saved_tiny[0], tmp_path / "two" / name)
    with pytest.raises(ValueError, match="Several checkpoints"):
        resolve_checkpoint_prefix(tmp_path / "two")
    release = tmp_path / "uncased_release"
    release.mkdir()
    with pytest.raises(FileNotFoundError, match="bert_config.json"):
        from_google_checkpoint(release)
    saved_tiny[0].encoder.config.to_json_file(release / "bert_config.json")
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        from_google_checkpoint(release)


@pytest.mark.parametrize("part", ["data-00000-of-00001", "index"])
def test_truncated_checkpoint(saved_tiny, tmp_path, part):
    pretrainer, prefix = saved_tiny
    copy = str(tmp_path / "bert_model.ckpt")
    for suffix in ("index", "data-00000-of-00001"):
        shutil.copy(f"{prefix}.{suffix}", f"{copy}.{suffix}")
    data = open(f"{copy}.{part}", "rb").read()
    open(f"{copy}.{part}", "wb").write(data[: len(data) // 2])
    model = _random_pretrainer(seed=4)
    before = _model_weights(model)
    with pytest.raises(ValueError, match=f"Cannot read .*TF checkpoint {copy} \\(truncated or corrupt\\?\\)"):
        load_google_checkpoint(model, copy)
    for a, b in zip(before, _model_weights(model)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize(
    "value, message",
    [
        (np.ones((50, 16), "int32"), "has dtype int32; weights must be floating point"),
        (np.ones((50, 16), bool), "has dtype bool; weights must be floating point"),
        (np.full((50, 16), b"x"), "has dtype object; weights must be floating point"),
        (np.full((50, 16), np.nan, "float32"), "holds NaN or infinite values"),
        (np.full((50, 16), 1e300), "holds NaN or infinite values"),  # float64 beyond float32
    ],
)
def test_unusable_values_are_named_and_load_nothing(saved_tiny, tmp_path, value, message):
    """Found by fuzzing: integer, boolean, string and non-finite variables used to load silently
    (or fail inside NumPy)."""
    pretrainer, _ = saved_tiny
    specs = weight_specs(pretrainer.encoder, "google")
    tensors = [tf.constant(value) if spec.name == "bert/embeddings/word_embeddings" else
               tf.constant(spec.variable.numpy().T if spec.transpose else spec.variable.numpy()) for spec in specs]
    prefix = str(tmp_path / "bert_model.ckpt")
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=[s.name for s in specs], shape_and_slices=[""] * len(specs),
                      tensors=tensors)
    model = _random_pretrainer(seed=7).encoder
    before = _model_weights(model)
    with pytest.raises(ValueError, match=f"{prefix}: tensor bert/embeddings/word_embeddings {message}"):
        load_google_checkpoint(model, prefix)
    for a, b in zip(before, _model_weights(model)):
        assert np.array_equal(a, b)


@pytest.fixture(scope="module")
def corrupted_copy(saved_tiny, tmp_path_factory):
    """`corrupted_copy(part, position, data, cut)`: the tiny checkpoint with `data` written over
    `part` (index or data) at `position`, truncated to `cut` bytes when given; returns the prefix."""
    _, prefix = saved_tiny
    files = {part: open(f"{prefix}.{part}", "rb").read() for part in ("index", "data-00000-of-00001")}
    folder = tmp_path_factory.mktemp("corrupted")

    def make(part, position, data, cut):
        copy = str(folder / "bert_model.ckpt")
        for name, content in files.items():
            if name == part:
                position %= len(content)
                content = content[:position] + data + content[position + len(data):]
                content = content[:cut] if cut is not None else content
            with open(f"{copy}.{name}", "wb") as f:
                f.write(content)
        return copy

    return make


@pytest.fixture(scope="module")
def load_target():
    """One tiny pretrainer to load into, reused across generated examples."""
    return _random_pretrainer(seed=8)


@pytest.mark.slow
@settings(deadline=None)
@given(part=st.sampled_from(["index", "data-00000-of-00001"]), position=st.integers(0, 10**6),
       data=st.binary(min_size=1, max_size=16), cut=st.none() | st.integers(0, 4000))
def test_corrupted_checkpoint_is_named_or_loads_exactly(saved_tiny, corrupted_copy, load_target, part, position,
                                                          data, cut):
    """Any overwritten or truncated bytes: one ValueError naming the checkpoint (weights untouched),
    or, where the bytes changed nothing that is read, exactly the saved weights."""
    pretrainer, _ = saved_tiny
    copy = corrupted_copy(part, position, data, cut)
    model = load_target
    for weight in model.weights:
        weight.assign(np.zeros(weight.shape, weight.dtype))
    before = _model_weights(model)
    try:
        load_google_checkpoint(model, copy)
    except ValueError as e:
        assert copy in str(e)
        for a, b in zip(before, _model_weights(model)):
            assert np.array_equal(a, b)
    else:
        for a, b in zip(_model_weights(model), _model_weights(pretrainer)):
            assert np.array_equal(a, b)


def test_interrupted_save_keeps_the_previous_checkpoint(saved_tiny, tmp_path, monkeypatch):
    pretrainer, _ = saved_tiny
    prefix = save_google_checkpoint(pretrainer, tmp_path / "bert_model.ckpt")
    original_save = tf.raw_ops.SaveV2

    def failing_save(prefix, tensor_names, shape_and_slices, tensors):
        original_save(prefix=prefix, tensor_names=tensor_names[:3], shape_and_slices=shape_and_slices[:3],
                      tensors=tensors[:3])
        raise OSError("disk full")

    monkeypatch.setattr(tf.raw_ops, "SaveV2", failing_save)
    with pytest.raises(OSError, match="disk full"):
        save_google_checkpoint(_random_pretrainer(seed=5, hidden_act="relu"), prefix, TINY_VOCAB)
    assert sorted(os.listdir(tmp_path)) == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                                            "bert_model.ckpt.index"]
    assert BertConfig.from_json_file(tmp_path / "bert_config.json").hidden_act == "gelu"
    restored = _random_pretrainer(seed=6)
    load_google_checkpoint(restored, prefix)
    for a, b in zip(_model_weights(restored), _model_weights(pretrainer)):
        assert np.array_equal(a, b)


def test_rejects_models_other_than_encoder_and_pretrainer(saved_tiny):
    import keras

    with pytest.raises(TypeError, match="BertEncoder or BertPretrainer.*Sequential"):
        load_google_checkpoint(keras.Sequential([keras.layers.Dense(2)]), saved_tiny[1])
