import keras
import numpy as np
import pytest

from keras_bert_lite.layers import (
    BertEmbeddings,
    BertPooler,
    ClassificationHead,
    MaskedLMHead,
    NextSentenceHead,
    SpanHead,
    TransformerEncoderBlock,
)

B, S, H, V = 2, 6, 16, 50


def _user_model(layer_fn):
    """A user's own functional model around one of our layers."""
    ids = keras.Input((None,), dtype="int32", name="ids")
    embeddings = BertEmbeddings(V, H, max_position_embeddings=16, name="embeddings")
    x = embeddings(ids, keras.ops.zeros_like(ids))
    return keras.Model(ids, layer_fn(x, ids, embeddings))


CASES = {
    "embeddings": lambda x, ids, emb: x,
    "encoder_block": lambda x, ids, emb: TransformerEncoderBlock(4, 32)(x, keras.ops.ones_like(ids)),
    "pooler": lambda x, ids, emb: BertPooler(H)(x),
    "masked_lm": lambda x, ids, emb: MaskedLMHead(emb)(x, keras.ops.mod(ids[:, :2], 3)),
    "next_sentence": lambda x, ids, emb: NextSentenceHead()(BertPooler(H)(x)),
    "classification": lambda x, ids, emb: ClassificationHead(3)(x),
    "span": lambda x, ids, emb: SpanHead()(x),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_layer_inside_a_user_model_round_trips_through_keras_file(case, tmp_path):
    keras.utils.set_random_seed(0)
    model = _user_model(CASES[case])
    ids = np.random.default_rng(0).integers(1, V, (B, S)).astype("int32")
    before = keras.tree.flatten(model(ids))
    model.save(tmp_path / "m.keras")
    after = keras.tree.flatten(keras.saving.load_model(tmp_path / "m.keras")(ids))
    assert len(before) == len(after)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "layer",
    [
        BertEmbeddings(V, H, 16, 3, 0.2, 0.05, 1e-6),
        TransformerEncoderBlock(4, 32, "relu", 0.2, 0.3, 0.05, 1e-6),
        BertPooler(H, 0.05),
        ClassificationHead(5, 0.3, 0.05),
        NextSentenceHead(0.05),
        SpanHead(0.05),
    ],
    ids=lambda layer: type(layer).__name__,
)
def test_get_config_round_trip(layer):
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


def test_masked_lm_head_config_round_trip():
    head = MaskedLMHead(BertEmbeddings(V, H), activation="relu", layer_norm_eps=1e-6)
    clone = MaskedLMHead.from_config(head.get_config())
    assert clone.get_config() == head.get_config()
    assert clone.embedding_layer.vocab_size == V


def test_encoder_block_is_post_layer_norm():
    keras.utils.set_random_seed(0)
    block = TransformerEncoderBlock(4, 32, dropout_rate=0.0, attention_dropout_rate=0.0)
    x = np.random.default_rng(0).normal(size=(B, S, H)).astype("float32") * 5 + 3
    y = np.asarray(block(x))
    # The block ends with LayerNorm (gamma 1, beta 0 at init): each position is normalised.
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-5)
    np.testing.assert_allclose(y.std(-1), 1, atol=1e-3)


def test_attention_mask_hides_padding_keys():
    keras.utils.set_random_seed(0)
    block = TransformerEncoderBlock(4, 32, dropout_rate=0.0, attention_dropout_rate=0.0)
    x = np.random.default_rng(0).normal(size=(1, S, H)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0, 0]])
    changed = x.copy()
    changed[:, 3:] += 10.0  # only masked positions change
    np.testing.assert_allclose(block(x, mask)[:, :3], block(changed, mask)[:, :3], atol=1e-6)


def test_block_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="not divisible by num_heads 3"):
        TransformerEncoderBlock(3, 32)(np.zeros((1, 2, H), "float32"))


def test_classification_head_rejects_zero_classes():
    with pytest.raises(ValueError, match="num_classes"):
        ClassificationHead(0)
