"""BertClassifier: logits, regression, `.keras` round trip, and fine-tuning from real weights."""

import keras
import numpy as np
import pytest

from keras_bert_lite import create_optimizer
from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import BertEncoder

VOCAB = 64


def _inputs(batch=4, seq=8, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, (batch, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[:, seq - 2 :] = 0
    return {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}


def _encoder():
    return BertEncoder(BertConfig.preset("tiny", vocab_size=VOCAB, num_hidden_layers=1))


def test_logits_come_from_the_pooled_output():
    encoder = _encoder()
    model = BertClassifier(encoder, num_classes=3)
    x = _inputs()
    logits = model(x, training=False)
    assert logits.shape == (4, 3) and logits.dtype == "float32"
    pooled = encoder(x, training=False)["pooled_output"]
    head = model.classifier.dense
    np.testing.assert_allclose(logits, pooled @ head.kernel + head.bias, atol=1e-5)
    assert model.encoder is encoder  # shared, not copied


def test_mean_pooling_reads_the_real_tokens_and_leaves_the_pooler_untrained(tmp_path):
    encoder = _encoder()
    model = BertClassifier(encoder, num_classes=3, pooling="mean")
    x = _inputs()  # the last 2 of 8 positions are padding
    tokens = np.asarray(encoder(x, training=False)["sequence_output"])
    head = model.classifier.dense
    expected = tokens[:, :6].mean(axis=1) @ np.asarray(head.kernel) + np.asarray(head.bias)
    np.testing.assert_allclose(model(x, training=False), expected, atol=1e-5)  # float32 sums of 6 vectors
    pooler = {id(weight) for weight in encoder.pooler.weights}
    assert pooler and not pooler & {id(v) for v in model.trainable_variables}
    assert len(model.trainable_variables) == len(encoder.trainable_variables) - len(pooler) + 2  # + the head's
    path = str(tmp_path / "clf.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.pooling == ("mean",)
    np.testing.assert_array_equal(model(x, training=False), loaded(x, training=False))


def test_bad_pooling_names_the_argument():
    with pytest.raises(ValueError, match="pooling must be 'pooler' or modes of SentencePooling.*'avg'"):
        BertClassifier(_encoder(), num_classes=2, pooling="avg")


def test_keras_round_trip(tmp_path):
    model = BertClassifier(_encoder(), num_classes=2, dropout_rate=0.2)
    path = str(tmp_path / "clf.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, BertClassifier) and loaded.num_classes == 2 and loaded.dropout_rate == 0.2
    x = _inputs()
    np.testing.assert_array_equal(model(x, training=False), loaded(x, training=False))


@pytest.mark.slow
def test_regression_with_one_output_learns_targets():
    keras.utils.set_random_seed(1)
    model = BertClassifier(_encoder(), num_classes=1)
    x = _inputs(batch=8)
    y = np.linspace(0.0, 5.0, 8).astype("float32")
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="mse")
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=25, batch_size=8, verbose=0)
    assert model(x).shape == (8, 1)
    assert model.evaluate(x, y, verbose=0) < 0.2 * before


@pytest.mark.parametrize("num_classes", [0, -1, 2.0, True])
def test_bad_num_classes(num_classes):
    with pytest.raises(ValueError, match="num_classes"):
        BertClassifier(_encoder(), num_classes=num_classes)


# ------------------------------------------------------------------ pre-trained vs random init
# A small sentiment task written for this test. Training and test sentences share almost no
# words, so only an encoder that already knows English can generalise from 24 examples.
_TRAIN = [
    ("I loved this film, it was wonderful.", 1), ("What a fantastic and moving story.", 1),
    ("The acting was brilliant and the music superb.", 1), ("A delightful, charming movie.", 1),
    ("I enjoyed every minute of it.", 1), ("An excellent, beautifully made picture.", 1),
    ("This is a great film that made me happy.", 1), ("Truly amazing, I would watch it again.", 1),
    ("The plot was clever and the ending perfect.", 1), ("A joyful and heartwarming experience.", 1),
    ("Highly recommended, a real masterpiece.", 1), ("Funny, smart and very entertaining.", 1),
    ("I hated this film, it was awful.", 0), ("What a boring and pointless story.", 0),
    ("The acting was terrible and the music annoying.", 0), ("A dreadful, ugly movie.", 0),
    ("I regretted every minute of it.", 0), ("A poor, badly made picture.", 0),
    ("This is a bad film that made me angry.", 0), ("Truly horrible, I want my money back.", 0),
    ("The plot was stupid and the ending a mess.", 0), ("A miserable and depressing experience.", 0),
    ("Avoid it, a complete disaster.", 0), ("Dull, silly and very tiresome.", 0),
]
_TEST = [
    ("Such a lovely, uplifting tale; the cast shines.", 1), ("Magnificent work, superb from start to end.", 1),
    ("It's a gem: witty, warm and gorgeous.", 1), ("Splendid direction and a terrific script.", 1),
    ("Pure bliss, my favourite movie this year.", 1), ("Wonderful performances, glorious photography.", 1),
    ("Refreshing, inventive and thoroughly enjoyable.", 1), ("Outstanding; I was thrilled.", 1),
    ("Such a dreary, lifeless tale; the cast flounders.", 0), ("Abysmal work, painful from start to end.", 0),
    ("It's junk: tedious, cold and hideous.", 0), ("Clumsy direction and a lousy script.", 0),
    ("Pure torture, my least favourite movie this year.", 0), ("Wooden performances, murky photography.", 0),
    ("Stale, lazy and thoroughly unpleasant.", 0), ("Atrocious; I was furious.", 0),
]


@pytest.mark.slow
def test_fine_tuning_from_pretrained_weights_beats_random_init(minilm_dir):
    """The short path on real weights: from_checkpoint on the Hugging Face folder, compile with
    BERT's AdamW schedule (the task's default loss and metrics), fit and predict on Python lists
    of strings."""
    keras.utils.set_random_seed(0)
    model = BertClassifier.from_checkpoint(minilm_dir, num_classes=2, seq_length=20, label_names=["neg", "pos"])
    random_weights = BertEncoder(model.encoder.config).get_weights()
    pretrained_weights = model.encoder.get_weights()
    head_weights = model.classifier.get_weights()
    texts, labels = [t for t, _ in _TRAIN], [("neg", "pos")[y] for _, y in _TRAIN]
    test_texts, test_labels = [t for t, _ in _TEST], [("neg", "pos")[y] for _, y in _TEST]

    # BERT's schedule over the 4 epochs of 3 batches, with the task's loss and metrics; compiled once,
    # so that both runs use one traced training step.
    model.compile(optimizer=create_optimizer(1.5e-4, num_train_steps=12, num_warmup_steps=1), jit_compile=False)

    def accuracy_from(encoder_weights) -> float:
        keras.utils.set_random_seed(0)
        model.encoder.set_weights(encoder_weights)
        model.classifier.set_weights(head_weights)
        if model.optimizer.built:  # a fresh optimizer's state: step 0 of the schedule, zero moments
            for variable in model.optimizer.variables:
                variable.assign(np.zeros(variable.shape, variable.dtype))
        model.fit(texts, labels, batch_size=8, epochs=4, verbose=0)
        return float(np.mean(np.array(model.predict_labels(test_texts, verbose=0)) == test_labels))

    pretrained_accuracy = accuracy_from(pretrained_weights)
    random_accuracy = accuracy_from(random_weights)
    print(f"held-out accuracy: pre-trained {pretrained_accuracy:.3f}, random init {random_accuracy:.3f}")
    assert pretrained_accuracy >= 0.8
    assert pretrained_accuracy >= random_accuracy + 0.2
