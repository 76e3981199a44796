"""`BertMaskedLM`: loading the MLM head from every kind of folder, fill-mask against
transformers' pipeline, masking raw text in the input pipeline, saving, bad input.

References nobody here wrote: a random `transformers.BertForMaskedLM` (and `BertModel`) saved
with `save_pretrained`, read by `transformers.pipeline("fill-mask")`; tolerances are stated
where used. Cases ported from KerasHub's `BertMaskedLMPreprocessor` / `BertMaskedLM` tests are
marked so.
"""

from __future__ import annotations

import json
import logging
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

import keras_bert_lite as kbl
from keras_bert_lite.models.losses import pretraining_statistics
from keras_bert_lite.models.masked_lm import mask_token_inputs

TEXTS = [
    "the capital of france is [MASK].",
    "a [MASK] sat on the [MASK] mat, it wasn't running",
    "[MASK]",
]
# Scores of transformers' pipeline (torch float32) and ours (TF float32) on the same weights.
SCORE_TOLERANCE = 1e-4


def _hf_config(**overrides):
    # initializer_range 0.5: peaked distributions, so the top-5 ranking is decided by clear margins.
    values = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=64, initializer_range=0.5,
                  hidden_act="gelu_new")  # the tanh GELU, which Google's format can express
    return transformers.BertConfig(**{**values, **overrides})


def _hf_folder(path, model, minilm_dir) -> str:
    model.save_pretrained(path)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(minilm_dir, name), path)
    return str(path)


@pytest.fixture(scope="module")
def hf_mlm_dir(tmp_path_factory, minilm_dir):
    """A random transformers `BertForMaskedLM` folder (real 30,522-token uncased vocabulary)."""
    torch.manual_seed(0)
    model = transformers.BertForMaskedLM(_hf_config()).eval()
    return _hf_folder(tmp_path_factory.mktemp("hf_mlm"), model, minilm_dir)


@pytest.fixture(scope="module")
def mlm(hf_mlm_dir):
    return kbl.BertMaskedLM.from_checkpoint(hf_mlm_dir, seq_length=32)


WORDS = "the a cat dog sat on mat log and quick brown fox jumped over lazy line of plain text about weather sea".split()


@pytest.fixture(scope="module")
def small():
    """A tiny model on a 27-token vocabulary: cheap to fit."""
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *(str(i) for i in range(8))]
    config = kbl.BertConfig.preset("tiny", vocab_size=len(vocabulary), max_position_embeddings=32)
    return kbl.BertMaskedLM(kbl.BertEncoder(config), kbl.BertPreprocessor(vocabulary, seq_length=16))


def _pipeline(folder):
    return transformers.pipeline("fill-mask", model=folder, device="cpu")


def _assert_same_predictions(ours, theirs):
    """Same tokens, strings and sequences in the same order; scores within SCORE_TOLERANCE."""
    assert len(ours) == len(theirs)
    for mine, ref in zip(ours, theirs):
        if isinstance(ref, dict):
            assert (mine["token"], mine["token_str"], mine["sequence"]) == (
                ref["token"], ref["token_str"], ref["sequence"])
            assert mine["score"] == pytest.approx(ref["score"], abs=SCORE_TOLERANCE)
        else:
            _assert_same_predictions(mine, ref)


@pytest.mark.slow
def test_fill_mask_matches_transformers_pipeline(mlm, hf_mlm_dir):
    pipe = _pipeline(hf_mlm_dir)
    ours = mlm.fill_mask(TEXTS, top_k=5)
    theirs = pipe(TEXTS, top_k=5)
    assert [len(r) for r in ours] == [5, 2, 5]  # one list per mask for the two-mask text
    assert all(len(per_mask) == 5 for per_mask in ours[1])
    _assert_same_predictions(ours, theirs)
    _assert_same_predictions(mlm.fill_mask(TEXTS[0], top_k=3), pipe(TEXTS[0], top_k=3))


def test_mask_written_in_text_whatever_the_casing(small):
    # An uncased vocabulary lower-cases text; "[MASK]" is still the mask token, "[mask]" is text.
    assert small.preprocessor.tokenizer.lower_case
    assert len(small.fill_mask("The CAT [MASK] on the mat.", top_k=2)) == 2
    with pytest.raises(ValueError, match=r"texts\[0\] has no \[MASK\]"):
        small.fill_mask(["the cat [mask] on the mat"])


@pytest.mark.slow
def test_save_hf_checkpoint_keeps_the_head_for_the_pipeline(mlm, tmp_path):
    folder = kbl.save_hf_checkpoint(mlm, tmp_path / "hf", mlm.preprocessor)
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]
    _assert_same_predictions(mlm.fill_mask(TEXTS), _pipeline(folder)(TEXTS))


@pytest.mark.slow
def test_save_google_checkpoint_keeps_the_head(mlm, tmp_path):
    kbl.save_google_checkpoint(mlm, tmp_path / "google" / "bert_model.ckpt", mlm.preprocessor)
    names = {name for name, _ in tf.train.list_variables(str(tmp_path / "google" / "bert_model.ckpt"))}
    assert "cls/predictions/output_bias" in names and "cls/seq_relationship/output_bias" not in names
    again = kbl.BertMaskedLM.from_checkpoint(tmp_path / "google", seq_length=32)
    _assert_same_predictions(again.fill_mask(TEXTS), mlm.fill_mask(TEXTS))


@pytest.mark.slow
def test_a_checkpoint_without_the_head_gets_a_new_tied_head(tmp_path, minilm_dir, caplog):
    torch.manual_seed(1)
    folder = _hf_folder(tmp_path / "bert_model", transformers.BertModel(_hf_config()), minilm_dir)
    with caplog.at_level(logging.INFO):
        model = kbl.BertMaskedLM.from_checkpoint(folder, seq_length=16)
    assert [r for r in caplog.records if "has no masked-LM head weights" in r.getMessage()]
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(model.masked_lm.output_bias), 0.0)
    assert model.masked_lm.embedding_layer is model.encoder.embeddings  # tied: decoded with the table
    assert len(model.fill_mask("a [MASK] day", top_k=2)) == 2


@pytest.mark.slow
def test_our_pretraining_folder_loads_the_trained_head(tmp_path, real_vocab_file):
    pretrainer = kbl.BertPretrainer(kbl.BertEncoder(kbl.BertConfig.preset("tiny", vocab_size=30522)))
    pretrainer.masked_lm.output_bias.assign(np.linspace(-1, 1, 30522, dtype="float32"))
    pretrainer.save(tmp_path / "pretrainer.keras")
    pretrainer.encoder.save(tmp_path / "encoder.keras")
    shutil.copy(real_vocab_file, tmp_path / "vocab.txt")
    for path in (tmp_path, tmp_path / "pretrainer.keras"):
        model = kbl.BertMaskedLM.from_checkpoint(path, seq_length=16)
        for mine, theirs in zip(model.masked_lm.weights, pretrainer.masked_lm.weights):
            np.testing.assert_array_equal(keras.ops.convert_to_numpy(mine), keras.ops.convert_to_numpy(theirs))
    # fill_mask's scores are the pre-trainer's own masked-LM probabilities (as the main job shows them).
    candidates = model.fill_mask("the cat [MASK] on the mat", top_k=3)
    inputs = mask_token_inputs(model.preprocessor, tf.constant(["the cat [MASK] on the mat"]))
    inputs.pop("num_masks")
    probabilities = tf.nn.softmax(pretrainer(inputs)["mlm_logits"][0, 0]).numpy()
    assert [c["token"] for c in candidates] == np.argsort(-probabilities)[:3].tolist()
    np.testing.assert_allclose([c["score"] for c in candidates], np.sort(probabilities)[::-1][:3], rtol=1e-5)


@pytest.mark.slow
def test_partial_head_is_an_error(tmp_path, hf_mlm_dir):
    import safetensors.numpy

    folder = shutil.copytree(hf_mlm_dir, tmp_path / "partial")
    tensors = safetensors.numpy.load_file(folder / "model.safetensors")
    del tensors["cls.predictions.bias"]
    tensors.pop("cls.predictions.decoder.bias", None)
    safetensors.numpy.save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ValueError, match="part of the masked-LM head"):
        kbl.BertMaskedLM.from_checkpoint(folder, seq_length=16)


def test_masking_in_the_pipeline(small):
    """Ported from KerasHub's BertMaskedLMPreprocessor tests (mask_token_rate=1, no random tokens:
    every selected token becomes [MASK]; labels are the original ids; weights mark the real ones)."""
    model = kbl.BertMaskedLM(small.encoder, small.preprocessor, max_predictions_per_seq=4, mask_token_rate=1.0,
                             random_token_rate=0.0)
    texts = ["the quick brown fox jumped over the lazy dog", "a cat"]
    features, labels, weights = next(iter(model.text_batches(texts, batch_size=2)))
    original = small.preprocessor(texts)["input_word_ids"].numpy()
    assert features["masked_lm_positions"].shape == labels.shape == weights.shape == (2, 4)
    # round(11 tokens * 0.15) = 2 and max(1, round(4 * 0.15)) = 1 predictions, as in BERT's data code.
    np.testing.assert_array_equal(weights.numpy().sum(axis=1), [2, 1])
    for row in range(2):
        real = features["masked_lm_positions"][row].numpy()[weights[row].numpy() > 0]
        np.testing.assert_array_equal(features["input_word_ids"].numpy()[row, real], small.preprocessor.tokenizer.mask_id)
        np.testing.assert_array_equal(labels.numpy()[row, : len(real)], original[row, real])
        untouched = np.setdiff1d(np.arange(16), real)
        np.testing.assert_array_equal(features["input_word_ids"].numpy()[row, untouched], original[row, untouched])


def test_masks_are_new_each_fit_epoch_and_fixed_for_evaluate(small):
    texts = [f"line {i} of plain text about the weather and the sea" for i in range(8)]

    def positions(batches):
        return np.concatenate([f["masked_lm_positions"].numpy() for f, _, _ in batches])

    fitted = small.text_batches(texts, batch_size=4, new_masks=True)
    assert not np.array_equal(positions(fitted), positions(fitted))
    keras.utils.set_random_seed(1)
    evaluated = small.text_batches(texts, batch_size=4)
    np.testing.assert_array_equal(positions(evaluated), positions(evaluated))
    keras.utils.set_random_seed(2)  # the global seed does not move evaluate's masks
    np.testing.assert_array_equal(positions(small.text_batches(texts, batch_size=4)), positions(evaluated))
    # A tf.data.Dataset of lines is read (and masked) as the list is.
    lines = small.text_batches(tf.data.Dataset.from_tensor_slices(texts), batch_size=4)
    np.testing.assert_array_equal(positions(lines), positions(evaluated))


def test_default_loss_is_berts_masked_lm_loss(small):
    features, labels, weights = next(iter(small.text_batches(["the cat sat on the mat"] * 3, batch_size=3)))
    logits = small(features)
    small.compile()
    ours = small.loss(labels, logits, sample_weight=weights)
    bert = pretraining_statistics(
        {"masked_lm_ids": labels, "masked_lm_weights": weights, "next_sentence_labels": tf.zeros([3, 1], tf.int32)},
        {"mlm_logits": logits, "nsp_logits": tf.zeros([3, 2])},
    )["mlm_loss"]
    assert float(ours) == pytest.approx(float(bert), rel=1e-4)  # BERT adds 1e-5 to the weight sum
    assert float(small.optimizer.learning_rate) == pytest.approx(1e-4)  # BERT's pre-training rate
    small.compile(learning_rate=5e-4)
    assert float(small.optimizer.learning_rate) == pytest.approx(5e-4)
    small.compile()


@pytest.mark.slow
def test_fit_on_raw_text_learns_and_keras_file_is_exact(tmp_path, small):
    """Ported from KerasHub's BertMaskedLM test: fit on raw strings, then save and load."""
    keras.utils.set_random_seed(3)
    model = kbl.BertMaskedLM(kbl.BertEncoder(small.encoder.config), small.preprocessor, max_predictions_per_seq=5)
    texts = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 8
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    before = model.evaluate(texts, return_dict=True, verbose=0)
    model.fit(texts, epochs=6, batch_size=8, verbose=0)
    after = model.evaluate(texts, return_dict=True, verbose=0)
    assert after["loss"] < before["loss"] - 1.0 and after["accuracy"] > before["accuracy"] + 0.2
    assert model.predict(texts[:3], verbose=0).shape == (3, 5, small.encoder.config.vocab_size)
    # Dict features with their labels and weights train too (what the pipeline makes of text).
    features, labels, weights = next(iter(model.text_batches(texts[:4], batch_size=4)))
    history = model.fit({name: value.numpy() for name, value in features.items()}, labels.numpy(),
                        sample_weight=weights.numpy(), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])

    model.save(tmp_path / "mlm.keras")
    loaded = keras.saving.load_model(tmp_path / "mlm.keras")
    assert isinstance(loaded, kbl.BertMaskedLM) and not loaded.compiled  # no optimizer state
    assert loaded.max_predictions_per_seq == 5
    np.testing.assert_array_equal(loaded.predict_on_batch(features), model.predict_on_batch(features))
    assert loaded.fill_mask("the [MASK] sat on the mat") == model.fill_mask("the [MASK] sat on the mat")


def test_bad_input(small):
    with pytest.raises(ValueError, match=r"texts\[1\] has no \[MASK\]"):
        small.fill_mask(["a [MASK] cat", "no mask here"])
    with pytest.raises(ValueError, match=r"texts\[0\] has no \[MASK\]"):
        small.fill_mask("")
    with pytest.raises(ValueError, match=r"texts\[0\] has no \[MASK\] within the first 16 tokens"):
        small.fill_mask("cat " * 20 + "[MASK]")
    with pytest.raises(ValueError, match="top_k"):
        small.fill_mask("a [MASK] cat", top_k=0)
    assert small.fill_mask([]) == []
    # More masks than max_predictions_per_seq (which limits training's masking only): all predicted.
    model = kbl.BertMaskedLM(small.encoder, small.preprocessor, max_predictions_per_seq=2)
    many = model.fill_mask(" ".join(["[MASK]"] * 5), top_k=1)
    assert len(many) == 5 and all(len(candidates) == 1 for candidates in many)
    with pytest.raises(ValueError, match="y and sample_weight must be None"):
        small.fit(["the cat sat"], [1])
    with pytest.raises(ValueError, match="max_predictions_per_seq"):
        kbl.BertMaskedLM(small.encoder, max_predictions_per_seq=0)
    with pytest.raises(ValueError, match="has no preprocessor"):
        kbl.BertMaskedLM(small.encoder).fill_mask("a [MASK] cat")


@pytest.mark.slow
def test_exported_model_fills_masks_as_fill_mask(tmp_path, small):
    kbl.export_saved_model(small, small.preprocessor, tmp_path / "export", top_k=3)
    serve = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    texts = ["the cat [MASK] on the [MASK].", "no mask here", "a [MASK] dog"]
    served = {name: value.numpy() for name, value in serve(text=tf.constant(texts)).items()}
    np.testing.assert_array_equal(served["num_masks"], [2, 0, 1])
    assert served["token_ids"].shape == served["scores"].shape == served["tokens"].shape == (3, 2, 3)
    for row, text in ((0, texts[0]), (2, texts[2])):
        expected = small.fill_mask(text, top_k=3)
        expected = [expected] if isinstance(expected[0], dict) else expected
        for m, candidates in enumerate(expected):
            assert served["token_ids"][row, m].tolist() == [c["token"] for c in candidates]
            assert [t.decode() for t in served["tokens"][row, m]] == [c["token_str"] for c in candidates]
            np.testing.assert_allclose(served["scores"][row, m], [c["score"] for c in candidates], atol=1e-6)
    # A text without [MASK] and the mask slot a one-mask text does not use: padding.
    assert (served["token_ids"][1] == -1).all() and (served["tokens"][1] == b"").all()
    assert (served["scores"][2, 1] == 0).all()


def test_an_int8_masked_lm_reloads_from_its_keras_file_with_the_same_logits(tmp_path):
    """The head's quantized layers are named in the model's `DTypePolicyMap`, as every task model's are."""
    keras.utils.set_random_seed(1)
    model = kbl.BertMaskedLM(kbl.BertEncoder(kbl.BertConfig.preset("tiny", vocab_size=60, num_hidden_layers=1)))
    ids = np.random.default_rng(0).integers(5, 60, (2, 8)).astype("int32")
    x = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids),
         "masked_lm_positions": np.array([[1, 2], [3, 4]], "int32")}
    model.quantize("int8")
    model.save(tmp_path / "m.keras")
    reloaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(reloaded.predict(x, verbose=0), model.predict(x, verbose=0))
