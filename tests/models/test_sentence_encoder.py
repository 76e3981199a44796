"""BertSentenceEncoder: sentence-transformers' embeddings (pooling, Normalize, truncation), `encode`
in input order whatever the batching, contrastive `fit`, `.keras` files and raw-text exports.

References nobody here wrote: sentence-transformers 6.2.0 (its `Pooling` module, its
`MultipleNegativesRankingLoss` and, on the real all-MiniLM-L6-v2 folder, `SentenceTransformer.encode`).
"""

import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf
import torch

from keras_bert_lite.config import BertConfig
from keras_bert_lite.export import export_saved_model
from keras_bert_lite.interop.sentence_transformers import read_sentence_transformers_config
from keras_bert_lite.layers.pooling import POOLING_MODES, SentencePooling
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.losses import multiple_negatives_ranking_loss
from keras_bert_lite.models.sentence_encoder import BertSentenceEncoder, plan_batches
from keras_bert_lite.text.preprocessor import BertPreprocessor

WORDS = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "rug", "fast", "slow", "big", "."]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
TEXTS = ["the cat sat on the mat .", "", "a dog ran", "the big big big dog ran fast on a rug .", "cat",
         "the slow cat sat", "a mat", "dog dog dog dog dog dog dog dog dog dog dog dog dog dog dog dog dog"]


@pytest.fixture(scope="module")
def tiny():
    """A tiny mean-pooling, normalizing encoder whose preprocessor truncates at 12 tokens."""
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=len(VOCAB), num_hidden_layers=1,
                                            max_position_embeddings=32))
    return BertSentenceEncoder(encoder, normalize=True, preprocessor=BertPreprocessor(VOCAB, seq_length=12))


@pytest.mark.slow  # the first import of sentence_transformers (and transformers) takes seconds
def test_pooling_modes_match_sentence_transformers_pooling():
    from sentence_transformers.models import Pooling

    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(4, 9, 6)).astype("float32")
    mask = (np.arange(9)[None] < np.array([[9], [1], [5], [2]])).astype("int32")  # right-padded rows
    for modes in [*POOLING_MODES, ("cls", "mean", "max")]:
        reference = Pooling(6, pooling_mode=modes)
        expected = reference({"token_embeddings": torch.tensor(tokens), "attention_mask": torch.tensor(mask)})
        ours = SentencePooling(modes)(tokens, mask)
        np.testing.assert_allclose(ours, expected["sentence_embedding"].numpy(), rtol=1e-6, atol=1e-6, err_msg=modes)
    with pytest.raises(ValueError, match="modes must name some of"):
        SentencePooling(["mean", "median"])


@pytest.mark.slow  # imports sentence_transformers
def test_ranking_loss_matches_sentence_transformers():
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    rng = np.random.default_rng(1)
    anchors, positives = rng.normal(size=(2, 5, 8)).astype("float32")
    reference = MultipleNegativesRankingLoss(model=None)  # scale 20, cosine, anchors to positives
    expected = reference.compute_loss_from_embeddings([torch.tensor(anchors), torch.tensor(positives)], None)
    np.testing.assert_allclose(multiple_negatives_ranking_loss(anchors, positives), expected.item(), rtol=1e-5)


def test_encode_returns_rows_in_input_order_equal_to_the_padded_model(tiny):
    padded = tiny(tiny.preprocessor(TEXTS), training=False).numpy()  # every text at 12 tokens
    for batch_size in (1, 3, 32):
        np.testing.assert_allclose(tiny.encode(TEXTS, batch_size=batch_size), padded, atol=2e-6)
    np.testing.assert_allclose(tiny.predict(TEXTS), padded, atol=2e-6)
    assert tiny.encode(TEXTS).dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(tiny.encode(TEXTS), axis=1), 1.0, rtol=1e-6)
    raw = tiny.encode(TEXTS, normalize=False)
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), padded, atol=2e-6)
    assert tiny.encode([]).shape == (0, 128) and tiny.encode("a cat").shape == (1, 128)
    # one trace for every batch size and length
    assert [f.experimental_get_tracing_count() for f in tiny._encode_functions.values()] == [1, 1]
    similarity = tiny.similarity(TEXTS[:3], TEXTS)
    assert similarity.shape == (3, len(TEXTS))
    np.testing.assert_allclose(similarity, padded[:3] @ padded.T, atol=2e-6)


def test_batches_are_split_where_padding_costs_more_than_a_call():
    def cost(bounds, widths, call_cost):
        return sum(call_cost + (end - start) * widths[start] for start, end in bounds)

    rng = np.random.default_rng(0)
    for _ in range(20):  # against every split of short sorted lists
        widths = np.sort(rng.choice([8, 16, 24, 64, 128], size=7))[::-1]
        bounds = plan_batches(widths, batch_size=3, call_cost=20)
        assert [b[0] for b in bounds[1:]] == [b[1] for b in bounds[:-1]] and bounds[0][0] == 0 and bounds[-1][1] == 7

        def fits(start, end, widths=widths):  # at most the padded tokens of 3 of the longest texts
            return (end - start) * widths[start] <= 3 * widths[0]

        assert all(fits(start, end) for start, end in bounds)
        every_split = []
        for cuts in range(2 ** 6):
            edges = [0] + [i + 1 for i in range(6) if cuts >> i & 1] + [7]
            if all(fits(a, b) for a, b in zip(edges, edges[1:])):
                every_split.append(cost(list(zip(edges, edges[1:])), widths, 20))
        assert cost(bounds, widths, 20) == min(every_split)
    # one long text is not the width of 31 short ones; similar widths stay in one call
    assert plan_batches(np.array([256] + [16] * 31), batch_size=32) == [(0, 1), (1, 32)]
    assert plan_batches(np.array([64] * 40), batch_size=32) == [(0, 32), (32, 40)]
    # short texts share calls up to the padded tokens of 32 of the longest: 2 calls, not 8
    assert plan_batches(np.array([256] * 32 + [16] * 200), batch_size=32) == [(0, 32), (32, 232)]
    assert plan_batches(np.array([], int), batch_size=32) == []


def test_bad_input_is_one_clear_error(tiny):
    with pytest.raises(ValueError, match=r"texts\[1\] is 3"):
        tiny.encode(["a cat", 3])
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        tiny.encode(["a cat"], batch_size=0)
    with pytest.raises(ValueError, match="trains on \\(anchors, positives\\) text pairs"):
        tiny.fit(["a cat", "a dog"], [0, 1], epochs=1, verbose=0)
    with pytest.raises(ValueError, match="has no preprocessor"):
        BertSentenceEncoder(tiny.encoder).encode(["a cat"])


@pytest.mark.slow  # traces a train step
def test_fit_on_pairs_brings_pairs_together_and_the_keras_file_is_exact(tiny, tmp_path):
    keras.utils.set_random_seed(2)
    model = BertSentenceEncoder.from_config(tiny.get_config())  # fresh weights: a copy to train
    for copy, original in zip(model.weights, tiny.weights):
        copy.assign(original)
    anchors = ["the cat sat", "a dog ran", "the big rug", "slow mat ."]
    positives = ["cat sat on a mat", "dog ran fast", "a big big rug", "the slow mat"]

    def matched_rank_loss():
        return float(multiple_negatives_ranking_loss(model.encode(anchors), model.encode(positives)))

    before = matched_rank_loss()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit((anchors, positives), batch_size=4, epochs=8, verbose=0).history
    assert history["loss"][-1] < history["loss"][0] and matched_rank_loss() < before

    path = str(tmp_path / "sentences.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertSentenceEncoder)
    assert (loaded.pooling_modes, loaded.normalize, loaded.preprocessor.seq_length) == (("mean",), True, 12)
    np.testing.assert_array_equal(loaded.encode(TEXTS), model.encode(TEXTS))


def _write_sentence_transformers_files(folder, modules, pooling=None, bert_config=None):
    (folder / "modules.json").write_text(json.dumps(modules))
    if pooling is not None:
        (folder / "1_Pooling").mkdir(exist_ok=True)
        (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    if bert_config is not None:
        (folder / "sentence_bert_config.json").write_text(json.dumps(bert_config))


MODULES = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
           {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]


def test_sentence_transformers_configs_are_read_or_refused_by_name(tmp_path, minilm_dir):
    config = read_sentence_transformers_config(minilm_dir)
    assert (config.pooling_modes, config.normalize, config.max_seq_length) == (("mean",), True, 256)
    assert read_sentence_transformers_config(tmp_path) is None  # a plain BERT folder
    _write_sentence_transformers_files(tmp_path, MODULES, {"pooling_mode": ["max", "cls"]}, {"max_seq_length": 64})
    config = read_sentence_transformers_config(tmp_path)
    assert (config.pooling_modes, config.normalize, config.max_seq_length) == (("max", "cls"), False, 64)
    _write_sentence_transformers_files(tmp_path, MODULES, {"pooling_mode_cls_token": True,
                                                           "pooling_mode_mean_tokens": False})
    assert read_sentence_transformers_config(tmp_path).pooling_modes == ("cls",)
    _write_sentence_transformers_files(tmp_path, MODULES, {"pooling_mode": "median"})
    with pytest.raises(ValueError, match=r"1_Pooling/config.json: pooling_mode \['median'\]"):
        read_sentence_transformers_config(tmp_path)
    dense = {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
    _write_sentence_transformers_files(tmp_path, [*MODULES, dense])
    with pytest.raises(ValueError, match=r"modules.json: modules \['sentence_transformers.models.Dense'\] are not"):
        read_sentence_transformers_config(tmp_path)


@pytest.mark.slow  # loads the real model twice and runs sentence-transformers
def test_real_minilm_matches_sentence_transformers(minilm_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    texts = [
        "A man is eating food.", "", "Zürich's café serves crème brûlée — naïvely priced at 12.50 CHF.",
        "东京是日本的首都，也是世界上最大的都市圈之一。", "Привет! Как дела? Сегодня хорошая погода.",
        "Die Katze schläft auf dem Sofa, während es draußen regnet.", "¿Dónde está la biblioteca?",
        "ΑΒΓ αβγ — Ελληνικά κείμενα.", "नमस्ते दुनिया", "The encoder is post-LayerNorm. " * 60,  # > 256 tokens
        " ".join(["supercalifragilisticexpialidocious"] * 40), "   ", "ok",
    ]
    model = BertSentenceEncoder.from_checkpoint(minilm_dir)
    assert (model.pooling_modes, model.normalize, model.preprocessor.seq_length) == (("mean",), True, 256)
    reference = SentenceTransformer(str(minilm_dir), device="cpu")
    expected = reference.encode(texts, batch_size=4)
    ours = model.encode(texts, batch_size=4)
    cosine = np.sum(ours * expected, axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() >= 0.99999, cosine
    assert np.abs(ours - expected).max() <= 1e-4

    # A plain BERT folder (no modules.json): mean pooling, not normalized, at max_position_embeddings,
    # as sentence-transformers builds it for such a folder.
    plain = tmp_path / "plain"
    plain.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"):
        (plain / name).symlink_to(minilm_dir / name)
    model = BertSentenceEncoder.from_checkpoint(plain)
    assert (model.pooling_modes, model.normalize, model.preprocessor.seq_length) == (("mean",), False, 512)
    expected = SentenceTransformer(str(plain), device="cpu").encode(texts[:4])
    np.testing.assert_allclose(model.encode(texts[:4]), expected, atol=1e-4)


@pytest.mark.slow  # a SavedModel export and load
def test_export_serves_the_embeddings_on_raw_strings(tiny, tmp_path):
    export_saved_model(tiny, tiny.preprocessor, tmp_path / "export")
    serve = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    served = serve(text=tf.constant(TEXTS))
    assert list(served) == ["embeddings"]
    np.testing.assert_allclose(served["embeddings"], tiny.encode(TEXTS), atol=2e-6)


def test_from_checkpoint_reads_the_folders_pooling(tmp_path, tiny):
    from keras_bert_lite.interop import save_hf_checkpoint

    folder = tmp_path / "hf"
    save_hf_checkpoint(tiny.encoder, str(folder), tiny.preprocessor)
    _write_sentence_transformers_files(folder, MODULES, {"pooling_mode": "cls"}, {"max_seq_length": 10})
    model = BertSentenceEncoder.from_checkpoint(folder)
    assert (model.pooling_modes, model.normalize, model.preprocessor.seq_length) == (("cls",), False, 10)
    sequence = tiny.encoder(tiny.preprocessor(TEXTS[:2]), training=False)["sequence_output"]
    np.testing.assert_allclose(model.encode(TEXTS[:2]), sequence[:, 0], atol=2e-6)
    shutil.rmtree(folder / "1_Pooling")
    with pytest.raises(FileNotFoundError, match="1_Pooling/config.json is missing"):
        BertSentenceEncoder.from_checkpoint(folder)
