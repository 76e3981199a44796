import io
import zipfile

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite import BertClassifier, BertConfig, BertEncoder, BertPretrainer, pretraining_losses

CONFIG = BertConfig.preset(
    "tiny", vocab_size=300, max_position_embeddings=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
)


def _batch(seed=0, batch=8, seq=16, predictions=4):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, CONFIG.vocab_size, (batch, seq)).astype("int32")
    positions = np.stack([np.sort(rng.choice(np.arange(1, seq), predictions, replace=False)) for _ in range(batch)])
    positions = positions.astype("int32")
    labels = np.take_along_axis(ids, positions, axis=1)
    masked = ids.copy()
    np.put_along_axis(masked, positions, 4, axis=1)
    weights = np.ones((batch, predictions), "float32")
    weights[:, -1] = 0.0  # padded prediction slots carry weight 0
    features = {
        "input_word_ids": masked,
        "input_mask": np.ones_like(ids),
        "input_type_ids": np.zeros_like(ids),
        "masked_lm_positions": positions,
    }
    labels = {
        "masked_lm_ids": labels,
        "masked_lm_weights": weights,
        "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype("int32"),
    }
    return features, labels


@pytest.fixture()
def pretrainer():
    keras.utils.set_random_seed(0)
    return BertPretrainer(BertEncoder(CONFIG))


def test_outputs(pretrainer):
    features, _ = _batch()
    out = pretrainer(features)
    assert out["mlm_logits"].shape == (8, 4, CONFIG.vocab_size) and out["mlm_logits"].dtype == "float32"
    assert out["nsp_logits"].shape == (8, 2)


def test_outputs_equal_the_heads_on_the_full_encoder_output(pretrainer):
    # The pre-trainer computes the encoder's last layer only at [CLS] and the masked positions.
    features, _ = _batch(seed=5)
    features["input_mask"][:, 12:] = 0
    out = pretrainer(features)
    encoded = pretrainer.encoder({name: features[name] for name in ("input_word_ids", "input_mask", "input_type_ids")})
    expected_mlm = pretrainer.masked_lm(encoded["sequence_output"], features["masked_lm_positions"])
    # Tolerance: float32 rounding of differently shaped matmuls.
    np.testing.assert_allclose(out["mlm_logits"], expected_mlm, atol=1e-5)
    np.testing.assert_allclose(out["nsp_logits"], pretrainer.next_sentence(encoded["pooled_output"]), atol=1e-5)


def test_decoder_is_tied_to_the_word_embeddings(pretrainer):
    vocab_sized = [w.path for w in pretrainer.weights if CONFIG.vocab_size in w.shape]
    assert sorted(vocab_sized) == ["embeddings/word_embeddings", "masked_lm/output_bias"]
    features, labels = _batch()
    table = pretrainer.encoder.embeddings.word_embeddings
    with tf.GradientTape() as tape:
        _, mlm_loss, _ = pretraining_losses(labels, pretrainer(features))
    grad = tf.convert_to_tensor(tape.gradient(mlm_loss, table))
    unused = np.setdiff1d(np.arange(CONFIG.vocab_size), features["input_word_ids"])
    # Rows of tokens absent from the input only get gradient through the tied decoder.
    assert np.abs(grad.numpy()[unused]).sum(axis=1).min() > 0


@pytest.mark.slow
def test_fit_overfits_a_small_batch(pretrainer):
    features, labels = _batch()
    # 30 steps at 3e-3 cut the loss 53-65x (five initial seeds); 80 steps at 2e-3 took ~500x.
    pretrainer.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = pretrainer.fit(features, labels, batch_size=8, epochs=30, verbose=0).history
    assert history["loss"][-1] < history["loss"][0] / 10
    result = pretrainer.evaluate(features, labels, verbose=0, return_dict=True)
    assert result["mlm_accuracy"] > 0.9 and result["nsp_accuracy"] > 0.9


def test_keras_file_round_trip(pretrainer, tmp_path):
    path = tmp_path / "pretrainer.keras"
    pretrainer.save(path)
    restored = keras.saving.load_model(path)
    assert restored.masked_lm.embedding_layer is restored.encoder.embeddings
    features, _ = _batch(seed=3)
    a, b = pretrainer(features), restored(features)
    np.testing.assert_array_equal(a["mlm_logits"], b["mlm_logits"])
    np.testing.assert_array_equal(a["nsp_logits"], b["nsp_logits"])


@pytest.mark.parametrize("model_fn", [BertPretrainer, lambda encoder: BertClassifier(encoder, num_classes=2)])
def test_keras_file_stores_the_encoder_as_one_nested_layer(model_fn, tmp_path):
    # The pre-trainer and classifier call the encoder as one nested model (its last layer at a
    # few positions); their files nest the encoder's weights under it, as release 0.1.0's did.
    model = model_fn(BertEncoder(CONFIG))
    path = tmp_path / "model.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive, archive.open("model.weights.h5") as weights:
        with h5py.File(io.BytesIO(weights.read())) as h5:
            top_level = set(h5["layers"])
    assert "bert_encoder" in top_level
    assert not top_level & {"bert_embeddings", "transformer_encoder_block", "bert_pooler"}


@pytest.mark.parametrize("bad_position", [16, -1])
def test_masked_positions_outside_the_sequence_are_an_error_naming_them(pretrainer, bad_position):
    features, _ = _batch()
    features["masked_lm_positions"][3, 1] = bad_position
    message = r"masked_lm_positions of a BertPretrainer\) must be in \[0, seq\)"
    for call in (pretrainer, tf.function(pretrainer)):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            call(features)
