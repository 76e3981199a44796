"""KerasHub BERT presets both ways, against KerasHub itself: presets that KerasHub 0.32 writes load
through `from_checkpoint` and compute what KerasHub computes on the same strings, and the presets
`save_keras_hub_preset` and `tpu/convert_checkpoint.py` write load in KerasHub with the outputs
ours compute. Tiny backbones (hidden 32, 2 layers) on the first 2,000 tokens of the real uncased
vocabulary (special tokens, characters, frequent words; other words split into pieces), with every weight (biases and LayerNorms too) randomised so that no misplaced tensor goes unseen.

Tolerance: 1e-5 (absolute) on sequence and pooled outputs of float32 computations, including our
float32 run of a bfloat16 preset's weights against KerasHub's float32 run of the same preset. Two
bfloat16 computations (ours and KerasHub's) agree to 2e-2 only: bfloat16 keeps 8 significant bits
(a step of 2^-8 = 3.9e-3 for values in [0.5, 1)), and the two graphs round intermediate results at
different points; measured up to 7.8e-3 on outputs up to 0.8 over three seeds, as far as each
library's own bfloat16 run is from its float32 run (up to 7.9e-3).
"""

import dataclasses
import json
import logging
import os
import pathlib

import h5py
import keras
import keras_hub
import numpy as np
import pytest

import keras_bert_lite as kbl
from keras_bert_lite.models.checkpoint_folder import find_checkpoint
from tests.examples import scripts

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "tpu" / "convert_checkpoint.py"
SEQ_LENGTH = 24
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello!",
    "Zürich's café serves crème brûlée, naïvely priced at 12.50 CHF.",
]
PAIRS = (["How old is the universe?", "Is it raining?"], ["About 13.8 billion years.", "No."])
TINY = dict(num_layers=2, num_heads=4, hidden_dim=32, intermediate_dim=37, max_sequence_length=64)


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory, real_vocab_file) -> str:
    """The real vocabulary's first 2,000 tokens: a small table keeps the tokenizers quick to build."""
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    lines = pathlib.Path(real_vocab_file).read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:2000]), encoding="utf-8")
    return str(path)


def _randomize(model: keras.Model, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        value = rng.normal(scale=0.2, size=variable.shape)
        variable.assign(value.astype(keras.backend.standardize_dtype(variable.dtype)))


def _their_outputs(backbone, preprocessor, texts) -> tuple[dict, dict]:
    """(KerasHub's packed inputs, its outputs) as numpy."""
    inputs = preprocessor(x=texts)  # by keyword: a positional tuple would be (x, y)
    outputs = backbone(inputs)
    return ({k: keras.ops.convert_to_numpy(v) for k, v in inputs.items()},
            {k: keras.ops.convert_to_numpy(v).astype(np.float32) for k, v in outputs.items()})


def _our_outputs(encoder, preprocessor, texts) -> tuple[dict, dict]:
    inputs = preprocessor(texts)
    outputs = encoder(inputs)
    return ({k: keras.ops.convert_to_numpy(v) for k, v in inputs.items()},
            {k: keras.ops.convert_to_numpy(v).astype(np.float32) for k, v in outputs.items()})


def _assert_same(ours: tuple[dict, dict], theirs: tuple[dict, dict], atol: float) -> None:
    our_inputs, our_outputs = ours
    their_inputs, their_outputs = theirs
    np.testing.assert_array_equal(our_inputs["input_word_ids"], their_inputs["token_ids"])
    np.testing.assert_array_equal(our_inputs["input_type_ids"], their_inputs["segment_ids"])
    np.testing.assert_array_equal(our_inputs["input_mask"], their_inputs["padding_mask"])
    mask = their_inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(our_outputs["pooled_output"], their_outputs["pooled_output"], rtol=0, atol=atol)
    np.testing.assert_allclose(
        our_outputs["sequence_output"][mask], their_outputs["sequence_output"][mask], rtol=0, atol=atol)


@pytest.fixture(scope="module")
def their_presets(tmp_path_factory, vocab_file) -> dict:
    """KerasHub-written presets: a float32 backbone, a task (BertTextClassifier) on it, a bfloat16
    backbone, and a GPT-2 backbone; with the KerasHub objects that wrote them."""
    root = tmp_path_factory.mktemp("keras_hub")
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab_file, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=SEQ_LENGTH)
    backbone = keras_hub.models.BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), **TINY)
    _randomize(backbone, 0)
    backbone.save_to_preset(root / "backbone")
    tokenizer.save_to_preset(root / "backbone")
    classifier = keras_hub.models.BertTextClassifier(backbone, num_classes=3, preprocessor=preprocessor)
    classifier.save_to_preset(root / "task")
    bf16 = keras_hub.models.BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), dtype="bfloat16", **TINY)
    _randomize(bf16, 1)
    bf16.save_to_preset(root / "bf16")
    tokenizer.save_to_preset(root / "bf16")
    gpt2 = keras_hub.models.GPT2Backbone(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8,
                                         intermediate_dim=16, max_sequence_length=16)
    gpt2.save_to_preset(root / "gpt2")
    return dict(root=root, backbone=backbone, preprocessor=preprocessor, bf16=bf16)


def test_from_checkpoint_computes_what_keras_hub_computes(their_presets):
    folder = their_presets["root"] / "backbone"
    encoder, preprocessor = kbl.from_checkpoint(folder, seq_length=SEQ_LENGTH)
    theirs = their_presets["backbone"], their_presets["preprocessor"]
    for texts in (TEXTS, PAIRS):
        _assert_same(_our_outputs(encoder, preprocessor, texts), _their_outputs(*theirs, texts), atol=1e-5)
    assert preprocessor.tokenizer.lower_case and not preprocessor.tokenizer.strip_accents  # as tokenizer.json says


def test_find_checkpoint_describes_a_preset(their_presets):
    folder = their_presets["root"] / "backbone"
    found = find_checkpoint(folder)
    assert (found.kind, found.lower_case) == ("keras_hub", True)
    assert found.weights == str(folder / "model.weights.h5")
    assert found.vocab_file == str(folder / "assets" / "tokenizer" / "vocabulary.txt")
    assert found.lower_case_source == f"lowercase in {folder / 'tokenizer.json'}"


def test_a_task_preset_loads_its_backbone_and_says_what_it_left_out(their_presets, caplog):
    folder = their_presets["root"] / "task"
    with caplog.at_level(logging.INFO):
        classifier = kbl.BertClassifier.from_checkpoint(folder, num_classes=3, seq_length=SEQ_LENGTH)
    left_out = " ".join(r.getMessage() for r in caplog.records if "not loaded" in r.getMessage())
    assert "keras_hub>BertTextClassifier(num_classes=3, activation='linear')" in left_out
    assert "task.weights.h5" in left_out and "sequence_length=24" in left_out
    theirs = their_presets["backbone"], their_presets["preprocessor"]
    _assert_same(_our_outputs(classifier.encoder, classifier.preprocessor, TEXTS), _their_outputs(*theirs, TEXTS),
                 atol=1e-5)


def test_a_bfloat16_preset_in_float32_and_in_bfloat16(their_presets):
    folder = their_presets["root"] / "bf16"
    theirs32 = keras_hub.models.BertBackbone.from_preset(str(folder), dtype="float32")
    their_preprocessor = their_presets["preprocessor"]
    encoder, preprocessor = kbl.from_checkpoint(folder, seq_length=SEQ_LENGTH)  # float32, the bf16 values exactly
    _assert_same(_our_outputs(encoder, preprocessor, TEXTS), _their_outputs(theirs32, their_preprocessor, TEXTS),
                 atol=1e-5)
    ours16 = kbl.BertEncoder(encoder.config, dtype="bfloat16")
    assert kbl.load_keras_hub_preset(ours16, folder).ok
    theirs16 = keras_hub.models.BertBackbone.from_preset(str(folder), dtype="bfloat16")
    _assert_same(_our_outputs(ours16, preprocessor, TEXTS), _their_outputs(theirs16, their_preprocessor, TEXTS),
                 atol=2e-2)


@pytest.fixture(scope="module")
def our_encoder(vocab_file) -> tuple:
    """(a randomised tiny BertEncoder of tanh GELU, its BertPreprocessor on the real vocabulary)."""
    config = kbl.BertConfig(vocab_size=2000, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=37, max_position_embeddings=64, hidden_act="gelu")
    encoder = kbl.BertEncoder(config)
    _randomize(encoder, 2)
    return encoder, kbl.BertPreprocessor(vocab_file, seq_length=SEQ_LENGTH, truncator="waterfall")


def _their_presets_of(folder: pathlib.Path, dtype: str = "float32") -> tuple:
    backbone = keras_hub.models.BertBackbone.from_preset(str(folder), dtype=dtype)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(str(folder))
    tokenizer = keras_hub.models.BertTokenizer.from_preset(str(folder))
    return backbone, preprocessor, tokenizer


def test_a_written_preset_computes_the_same_in_keras_hub(tmp_path, our_encoder):
    encoder, preprocessor = our_encoder
    folder = tmp_path / "preset"
    assert kbl.save_keras_hub_preset(encoder, folder, vocabulary=preprocessor) == str(folder)
    backbone, their_preprocessor, tokenizer = _their_presets_of(folder)
    assert (their_preprocessor.sequence_length, their_preprocessor.truncate) == (SEQ_LENGTH, "waterfall")
    assert tokenizer.vocabulary_size() == 2000 and tokenizer.lowercase and tokenizer.strip_accents
    for texts in (TEXTS, PAIRS):
        _assert_same(_our_outputs(encoder, preprocessor, texts), _their_outputs(backbone, their_preprocessor, texts),
                     atol=1e-5)
    assert not [p for p in folder.rglob("*") if ".partial-" in p.name]  # published atomically
    assert (find_checkpoint(folder).kind, find_checkpoint(folder).lower_case) == ("keras_hub", True)


def test_a_bfloat16_encoder_is_written_as_a_bfloat16_preset(tmp_path, our_encoder):
    encoder, preprocessor = our_encoder
    ours16 = kbl.BertEncoder(encoder.config, dtype="bfloat16")
    ours16.set_weights(encoder.get_weights())
    folder = tmp_path / "preset16"
    kbl.save_keras_hub_preset(ours16, folder, vocabulary=preprocessor)
    config = json.loads((folder / "config.json").read_text())
    assert config["config"]["dtype"]["config"]["name"] == "bfloat16"
    backbone, their_preprocessor, _ = _their_presets_of(folder, dtype="bfloat16")
    np.testing.assert_array_equal(  # the bfloat16 values as they were, not rounded twice
        keras.ops.convert_to_numpy(backbone.token_embedding.embeddings).astype(np.float32),
        keras.ops.convert_to_numpy(ours16.embeddings.word_embeddings).astype(np.float32))
    _assert_same(_our_outputs(ours16, preprocessor, TEXTS), _their_outputs(backbone, their_preprocessor, TEXTS),
                 atol=2e-2)
    with h5py.File(folder / "model.weights.h5") as f:
        assert f["layers/reversible_embedding/vars/0"].attrs["dtype"] == "bfloat16"


@pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")
def test_a_classifier_is_written_as_a_bert_text_classifier(tmp_path, our_encoder):
    encoder, preprocessor = our_encoder
    classifier = kbl.BertClassifier(encoder, num_classes=3, preprocessor=preprocessor)
    _randomize(classifier.classifier, 3)
    folder = tmp_path / "task"
    kbl.save_keras_hub_preset(classifier, folder)  # the vocabulary is the classifier's preprocessor
    theirs = keras_hub.models.BertTextClassifier.from_preset(str(folder))  # warns: no optimizer state saved
    their_logits = theirs(theirs.preprocessor(x=TEXTS))  # called, not `predict`: no tf.data pipeline to trace
    np.testing.assert_allclose(keras.ops.convert_to_numpy(their_logits),
                               keras.ops.convert_to_numpy(classifier(preprocessor(TEXTS))), rtol=0, atol=1e-5)


@pytest.mark.parametrize("model", ["mean_pooled_classifier", "token_classifier"])
def test_a_head_keras_hub_lacks_is_left_out_with_a_warning(tmp_path, our_encoder, caplog, model):
    encoder, preprocessor = our_encoder
    model = (kbl.BertClassifier(encoder, num_classes=3, preprocessor=preprocessor, pooling="mean")
             if model == "mean_pooled_classifier" else kbl.BertTokenClassifier(encoder, 3, preprocessor=preprocessor))
    folder = tmp_path / "encoder_only"
    with caplog.at_level(logging.WARNING):
        kbl.save_keras_hub_preset(model, folder)
    assert not (folder / "task.json").exists() and (folder / "model.weights.h5").exists()
    assert f"only the encoder of the {type(model).__name__} is written" in caplog.text
    assert ("pooling=('mean',)" in caplog.text) == isinstance(model, kbl.BertClassifier)


def test_another_architecture_is_one_error_naming_it(their_presets):
    folder = their_presets["root"] / "gpt2"
    with pytest.raises(ValueError, match=r"config.json holds a keras_hub>GPT2Backbone, not a KerasHub BertBackbone"):
        kbl.from_checkpoint(folder)


def test_an_exact_gelu_model_needs_approximate_gelu(tmp_path, our_encoder):
    exact = kbl.BertEncoder(dataclasses.replace(our_encoder[0].config, hidden_act="gelu_exact"))
    with pytest.raises(ValueError, match=r"hidden_act is 'gelu_exact'.*approximate_gelu=True"):
        kbl.save_keras_hub_preset(exact, tmp_path / "exact")
    assert not os.path.exists(tmp_path / "exact")


def test_convert_checkpoint_to_and_from_a_preset(tmp_path, their_presets, capfd):
    hf = tmp_path / "hf"
    preset = tmp_path / "preset"
    code, _, stderr = scripts.run_script(SCRIPT, capfd, f"--input={their_presets['root'] / 'task'}",
                                         f"--output={hf}", "--output_format=hf")
    assert code == 0, stderr
    assert json.loads((hf / "tokenizer_config.json").read_text())["do_lower_case"] is True
    code, _, stderr = scripts.run_script(SCRIPT, capfd, f"--input={hf}", f"--output={preset}",
                                         "--output_format=keras_hub")
    assert code == 0, stderr
    backbone, _, tokenizer = _their_presets_of(preset)
    assert tokenizer.lowercase
    _, theirs = _their_outputs(backbone, their_presets["preprocessor"], TEXTS)
    _, expected = _their_outputs(their_presets["backbone"], their_presets["preprocessor"], TEXTS)
    for name in expected:
        np.testing.assert_allclose(theirs[name], expected[name], rtol=0, atol=1e-5)
