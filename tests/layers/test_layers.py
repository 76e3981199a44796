import keras
import numpy as np
import pytest
import tensorflow as tf

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
    "encoder_block_at_positions": lambda x, ids, emb: TransformerEncoderBlock(4, 32)(
        x, keras.ops.ones_like(ids), output_positions=keras.ops.mod(ids[:, :2], 3)
    ),
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


def _numpy_block(block, x, mask):
    """BERT's encoder layer written out in float64 numpy from the block's own weights."""

    def dense(layer, v):
        return v @ np.asarray(layer.kernel, "float64") + np.asarray(layer.bias, "float64")

    def layer_norm(layer, v):
        mean, var = v.mean(-1, keepdims=True), v.var(-1, keepdims=True)
        return (v - mean) / np.sqrt(var + layer.epsilon) * np.asarray(layer.gamma) + np.asarray(layer.beta)

    def heads(v):  # [B, S, H] -> [B, A, S, d]
        return v.reshape(v.shape[0], v.shape[1], block.num_heads, -1).transpose(0, 2, 1, 3)

    q, k, v = (heads(dense(layer, x)) for layer in (block.query, block.key, block.value))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1]) + (1.0 - mask[:, None, None, :]) * -10000.0
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(x.shape)
    x = layer_norm(block.attention_layer_norm, x + dense(block.attention_output, context))
    inner = dense(block.intermediate, x)  # pre-activation
    gelu = 0.5 * inner * (1 + np.tanh(np.sqrt(2 / np.pi) * (inner + 0.044715 * inner**3)))
    return layer_norm(block.output_layer_norm, x + dense(block.output_dense, gelu))


def test_encoder_block_matches_a_numpy_transcription_of_bert_attention():
    # Random non-zero biases and larger kernels so that attention is far from uniform.
    keras.utils.set_random_seed(1)
    block = TransformerEncoderBlock(4, 32, dropout_rate=0.0, attention_dropout_rate=0.0)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(B, S, H)).astype("float32")
    block(x)
    for weight in block.weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape).astype("float32"))
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    expected = _numpy_block(block, x.astype("float64"), mask)
    # Tolerance: float32 against float64 through LayerNorm of O(1) activations.
    np.testing.assert_allclose(np.asarray(block(x, mask)), expected, atol=2e-5)


def test_block_at_output_positions_is_the_full_block_gathered_there():
    # The last layer of the pre-trainer and classifier computes only the positions they read;
    # outputs and every gradient must be those of the full layer gathered at those positions.
    keras.utils.set_random_seed(3)
    block = TransformerEncoderBlock(4, 32, dropout_rate=0.0, attention_dropout_rate=0.0)
    x = tf.constant(np.random.default_rng(3).normal(size=(B, S, H)).astype("float32"))
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    positions = np.array([[0, 3, 1], [0, 5, 5]], "int32")  # any order, repeats allowed
    block(x)

    def outputs_and_gradients(at_positions, training):
        with tf.GradientTape() as tape:
            tape.watch(x)
            if at_positions:
                y = block(x, mask, training=training, output_positions=positions)
            else:
                y = tf.gather(block(x, mask, training=training), positions, batch_dims=1)
            loss = tf.reduce_sum(y**3)
        return [y, *tape.gradient(loss, [x, *block.trainable_weights])]

    for training in (False, True):
        pairs = zip(outputs_and_gradients(True, training), outputs_and_gradients(False, training))
        for at_positions, gathered in pairs:
            # Tolerance: float32 rounding of differently shaped matmuls (measured ~1e-6).
            np.testing.assert_allclose(at_positions, gathered, rtol=1e-4, atol=1e-5)
    assert block.compute_output_shape((B, S, H), (B, S), (B, 3)) == (B, 3, H)


def test_block_rejects_output_positions_outside_the_sequence():
    block = TransformerEncoderBlock(4, 32)
    x = np.zeros((B, S, H), "float32")
    message = r"output_positions \(the masked_lm_positions of a BertPretrainer\) must be in \[0, seq\)"
    for bad in (S, -1):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            block(x, output_positions=np.array([[0], [bad]], "int32"))
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            tf.function(block)(x, output_positions=np.array([[0], [bad]], "int32"))


def test_block_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="not divisible by num_heads 3"):
        TransformerEncoderBlock(3, 32)(np.zeros((1, 2, H), "float32"))


def test_classification_head_rejects_zero_classes():
    with pytest.raises(ValueError, match="num_classes"):
        ClassificationHead(0)
