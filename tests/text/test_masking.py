"""MaskedLMMasker: statistics on a large batch, the original's prediction count, whole words, seeds."""

import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.text.masking import MaskedLMMasker, mask_tokens
from keras_bert_lite.text.tokenizer import BertTokenizer

BATCH, SEQ, MAX_PRED = 4096, 128, 20


@pytest.fixture(scope="module")
def real_batch(real_vocab_file, real_sentences):
    """4096 x 128 real [CLS] A [SEP] B [SEP] sequences, from full rows down to a few tokens."""
    tokenizer = BertTokenizer(real_vocab_file)
    pieces = tokenizer(tf.constant(real_sentences[:3000])).to_list()
    pieces = [p for p in pieces if p]
    rng = random.Random(0)
    rows = np.full((BATCH, SEQ), tokenizer.pad_id, np.int32)
    for row in rows:
        length = rng.choice([SEQ, SEQ, rng.randint(5, SEQ)])
        a, b = [], []
        while len(a) + len(b) < length - 3:
            (a if rng.random() < 0.5 else b).extend(rng.choice(pieces))
        a, b = a[: max(1, (length - 3) // 2)], b[: length - 3 - max(1, (length - 3) // 2)]
        ids = [tokenizer.cls_id, *a, tokenizer.sep_id, *b, tokenizer.sep_id]
        row[: len(ids)] = ids
    return tokenizer, rows


def _masker(tokenizer, **kwargs):
    kwargs.setdefault("seed", 1234)
    return MaskedLMMasker.from_tokenizer(tokenizer, max_predictions_per_seq=MAX_PRED, **kwargs)


def test_masking_statistics_on_a_large_batch(real_batch):
    tokenizer, ids = real_batch
    out = {k: v.numpy() for k, v in _masker(tokenizer)(tf.constant(ids)).items()}
    special = np.isin(ids, [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id])
    weights, positions, labels = out["masked_lm_weights"], out["masked_lm_positions"], out["masked_lm_ids"]
    selected = weights > 0

    assert out["input_word_ids"].shape == (BATCH, SEQ) and positions.shape == (BATCH, MAX_PRED)
    assert weights.dtype == np.float32 and set(np.unique(weights)) <= {0.0, 1.0}
    assert selected.sum(axis=1).max() <= MAX_PRED
    # Real predictions come first, in ascending position order; padding is all zeros.
    assert np.all(np.diff(selected.astype(int), axis=1) <= 0)
    assert np.all(np.where(selected[:, 1:], np.diff(positions, axis=1) > 0, True))
    assert np.all(positions[~selected] == 0) and np.all(labels[~selected] == 0)
    # Labels are the original ids; special tokens and padding are never chosen.
    rows = np.nonzero(selected)[0]
    chosen = positions[selected]
    assert np.array_equal(labels[selected], ids[rows, chosen])
    assert not special[rows, chosen].any()
    # Only the chosen positions change.
    changed = out["input_word_ids"] != ids
    chosen_mask = np.zeros_like(changed)
    chosen_mask[rows, chosen] = True
    assert not (changed & ~chosen_mask).any()

    rate = selected.sum() / (~special).sum()
    assert abs(rate - 0.15) < 0.01, rate
    replaced = out["input_word_ids"][rows, chosen]
    as_mask = np.mean(replaced == tokenizer.mask_id)
    kept = np.mean(replaced == labels[selected])
    randomised = 1 - as_mask - kept
    assert abs(as_mask - 0.8) < 0.02 and abs(kept - 0.1) < 0.02 and abs(randomised - 0.1) < 0.02
    assert np.all((replaced >= 0) & (replaced < tokenizer.vocab_size))


def test_prediction_counts_match_original_create_masked_lm_predictions(real_batch, import_original_bert):
    create_pretraining_data = import_original_bert("create_pretraining_data")

    tokenizer, ids = real_batch
    ids = ids[:512]
    out = _masker(tokenizer)(tf.constant(ids))
    ours = out["masked_lm_weights"].numpy().sum(axis=1).astype(int).tolist()
    vocab = tokenizer.vocabulary
    rng = random.Random(0)
    expected = []
    for row in ids:
        tokens = [vocab[i] for i in row if i != tokenizer.pad_id]
        _, positions, _ = create_pretraining_data.create_masked_lm_predictions(
            tokens, 0.15, MAX_PRED, vocab, rng)
        expected.append(len(positions))
    assert ours == expected


def test_seeded_masks_are_reproducible_and_change_per_call(real_batch):
    tokenizer, ids = real_batch
    batch = tf.constant(ids[:256])
    first, second = _masker(tokenizer, seed=7), _masker(tokenizer, seed=7)
    a1, a2 = first(batch), first(batch)
    b1 = second(batch)
    for name in a1:
        assert np.array_equal(a1[name], b1[name])
    assert not np.array_equal(a1["masked_lm_positions"], a2["masked_lm_positions"])
    other = _masker(tokenizer, seed=8)(batch)
    assert not np.array_equal(a1["masked_lm_positions"], other["masked_lm_positions"])
    # The stateless function: same seed, same mask.
    kwargs = dict(vocab_size=tokenizer.vocab_size, mask_token_id=tokenizer.mask_id,
                  special_token_ids=[tokenizer.cls_id, tokenizer.sep_id])
    f1 = mask_tokens(batch, tf.constant([3, 4]), **kwargs)
    f2 = mask_tokens(batch, tf.constant([3, 4]), **kwargs)
    assert np.array_equal(f1["input_word_ids"], f2["input_word_ids"])


def test_mask_method_applies_the_layer_settings_statelessly(real_batch):
    tokenizer, ids = real_batch
    batch = tf.constant(ids[:256])
    masker = _masker(tokenizer, whole_word_masking=True, selection_rate=0.2, mask_token_rate=0.5,
                     random_token_rate=0.3)
    state = masker.seed_generator.state.numpy().copy()
    seed = tf.constant([5, 6])
    out = masker.mask(batch, seed)
    expected = mask_tokens(
        batch, seed, vocab_size=tokenizer.vocab_size, mask_token_id=tokenizer.mask_id,
        special_token_ids=[tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id], padding_id=tokenizer.pad_id,
        selection_rate=0.2, mask_token_rate=0.5, random_token_rate=0.3, max_predictions_per_seq=MAX_PRED,
        continuation_ids=[i for i, t in enumerate(tokenizer.vocabulary) if t.startswith("##")],
    )
    for name in expected:
        np.testing.assert_array_equal(out[name], expected[name])
    np.testing.assert_array_equal(masker.seed_generator.state, state)  # the layer's seed state is untouched
    again = tf.function(masker.mask)(batch, seed)
    np.testing.assert_array_equal(again["input_word_ids"], out["input_word_ids"])


def test_whole_word_masking_selects_whole_words(real_batch):
    tokenizer, ids = real_batch
    ids = ids[:1024]
    out = _masker(tokenizer, whole_word_masking=True)(tf.constant(ids))
    weights, positions = out["masked_lm_weights"].numpy(), out["masked_lm_positions"].numpy()
    is_piece = np.array([t.startswith("##") for t in tokenizer.vocabulary])
    special = np.isin(ids, [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id])
    words_with_pieces = 0
    for row, row_special, w, p in zip(ids, special, weights, positions):
        chosen = set(p[w > 0].tolist())
        assert len(chosen) <= MAX_PRED
        # Words: a non-special token, then the "##" tokens right after it.
        words = []
        for i in np.nonzero(~row_special)[0]:
            if is_piece[row[i]] and words and words[-1][-1] == i - 1:
                words[-1].append(i)
            else:
                words.append([i])
        for word in words:
            taken = [i in chosen for i in word]
            assert all(taken) or not any(taken), (word, chosen)
            words_with_pieces += len(word) > 1 and all(taken)
        assert not row_special[list(chosen)].any()
    assert words_with_pieces > 50
    rate = (weights > 0).sum() / (~special).sum()
    assert abs(rate - 0.15) < 0.01, rate


def test_short_sequences_and_max_predictions():
    masker = MaskedLMMasker(vocab_size=50, mask_token_id=4, special_token_ids=[2, 3], seed=0,
                            max_predictions_per_seq=2, selection_rate=0.5)
    ids = tf.constant([[2, 10, 11, 12, 13, 14, 15, 3], [2, 10, 3, 0, 0, 0, 0, 0], [2, 3, 0, 0, 0, 0, 0, 0]])
    out = masker(ids)
    assert out["masked_lm_weights"].numpy().sum(axis=1).tolist() == [2, 1, 0]
    # Fewer positions than max_predictions_per_seq: outputs are still padded to it.
    wide = MaskedLMMasker(vocab_size=50, mask_token_id=4, special_token_ids=[2, 3], seed=0,
                          max_predictions_per_seq=20)(ids[:, :4])
    assert wide["masked_lm_positions"].shape == (3, 20)


def test_empty_rows_give_an_empty_batch_of_consistent_shapes(real_batch):
    tokenizer, _ = real_batch
    for whole_words in (False, True):
        masker = _masker(tokenizer, whole_word_masking=whole_words)
        for ids in (tf.zeros([3, 0], tf.int32), tf.zeros([0, 0], tf.int32)):
            out = masker(ids)
            batch = ids.shape[0]
            assert out["input_word_ids"].shape == (batch, 0)
            for name in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"):
                assert out[name].shape == (batch, MAX_PRED) and not out[name].numpy().any(), name


def test_invalid_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="needs `vocabulary`"):
        MaskedLMMasker(100, 4, [2, 3], whole_word_masking=True)
    with pytest.raises(ValueError, match="sum <= 1"):
        MaskedLMMasker(100, 4, [2, 3], mask_token_rate=0.9, random_token_rate=0.2)
    with pytest.raises(ValueError, match="selection_rate"):
        MaskedLMMasker(100, 4, [2, 3], selection_rate=0.0)
    with pytest.raises(ValueError, match="mask_token_id=100 is outside"):
        MaskedLMMasker(100, 100, [2, 3])
    with pytest.raises(ValueError, match="shape \\[batch, seq_length\\]"):
        MaskedLMMasker(100, 4, [2, 3])(tf.constant([1, 2, 3]))


def test_works_in_tf_data_map(real_batch):
    tokenizer, ids = real_batch
    masker = _masker(tokenizer, seed=5)
    dataset = tf.data.Dataset.from_tensor_slices(ids[:64]).batch(16).map(masker)
    epoch1 = [b["masked_lm_positions"].numpy() for b in dataset]
    epoch2 = [b["masked_lm_positions"].numpy() for b in dataset]
    assert all(b.shape == (16, MAX_PRED) for b in epoch1)
    assert not all(np.array_equal(x, y) for x, y in zip(epoch1, epoch2))  # a new mask each epoch
    # A new masker with the same seed replays the same masks.
    fresh = _masker(tokenizer, seed=5)
    replay = [b["masked_lm_positions"].numpy()
              for b in tf.data.Dataset.from_tensor_slices(ids[:64]).batch(16).map(fresh)]
    assert all(np.array_equal(x, y) for x, y in zip(epoch1, replay))


def test_config_round_trip_and_keras_file(tmp_path, real_batch):
    tokenizer, ids = real_batch
    batch = tf.constant(ids[:32])
    masker = _masker(tokenizer, seed=11, whole_word_masking=True, selection_rate=0.2)
    clone = MaskedLMMasker.from_config(masker.get_config())
    expected, actual = masker(batch), clone(batch)
    for name in expected:
        assert np.array_equal(actual[name], expected[name])

    inputs = keras.Input(shape=(SEQ,), dtype="int32")
    model = keras.Model(inputs, _masker(tokenizer, seed=11)(inputs))
    fresh = keras.Model(inputs, _masker(tokenizer, seed=11)(inputs))
    model.save(tmp_path / "masker.keras")
    reloaded = keras.saving.load_model(tmp_path / "masker.keras")
    expected, actual = fresh(batch), reloaded(batch)
    for name in expected:
        assert np.array_equal(actual[name], expected[name])
