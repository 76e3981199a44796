"""BertPackInputs: layout, segment ids, padding, truncation (against the original BERT code), errors,
and the same on generated batches (hypothesis)."""

import random

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert_lite.text.packer import BertPackInputs

CLS, SEP, PAD = 101, 102, 0


def _pack(seq_length, *segments, **kwargs):
    packer = BertPackInputs(seq_length, start_of_sequence_id=CLS, end_of_segment_id=SEP,
                            padding_id=PAD, **kwargs)
    ragged = [tf.ragged.constant(s, dtype=tf.int32) for s in segments]
    out = packer(ragged if len(ragged) > 1 else ragged[0])
    return {name: value.numpy().tolist() for name, value in out.items()}


def test_single_segment_layout():
    out = _pack(8, [[1, 2, 3], [4], []])
    assert out["input_word_ids"] == [[CLS, 1, 2, 3, SEP, PAD, PAD, PAD],
                                     [CLS, 4, SEP, PAD, PAD, PAD, PAD, PAD],
                                     [CLS, SEP, PAD, PAD, PAD, PAD, PAD, PAD]]
    assert out["input_mask"] == [[1] * 5 + [0] * 3, [1] * 3 + [0] * 5, [1] * 2 + [0] * 6]
    assert out["input_type_ids"] == [[0] * 8] * 3


def test_pair_layout_and_segment_ids():
    out = _pack(10, [[1, 2], [3]], [[7, 8, 9], []])
    assert out["input_word_ids"] == [[CLS, 1, 2, SEP, 7, 8, 9, SEP, PAD, PAD],
                                     [CLS, 3, SEP, SEP, PAD, PAD, PAD, PAD, PAD, PAD]]
    assert out["input_type_ids"] == [[0, 0, 0, 0, 1, 1, 1, 1, 0, 0],
                                     [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]]
    assert out["input_mask"] == [[1] * 8 + [0] * 2, [1] * 4 + [0] * 6]


def test_three_segments_get_ids_0_1_2():
    out = _pack(9, [[1]], [[2, 3]], [[4]])
    assert out["input_word_ids"] == [[CLS, 1, SEP, 2, 3, SEP, 4, SEP, PAD]]
    assert out["input_type_ids"] == [[0, 0, 0, 1, 1, 1, 2, 2, 0]]


def test_truncation_matches_original_truncate_seq_pair(original_classifier):
    truncate_seq_pair = original_classifier["_truncate_seq_pair"]
    rng = random.Random(0)
    seq_length = 16
    pairs = [(rng.randint(0, 25), rng.randint(0, 25)) for _ in range(300)]
    pairs += [(13, 0), (0, 13), (14, 14), (7, 6), (6, 7), (100, 1)]
    segments_a = [list(range(1, n + 1)) for n, _ in pairs]
    segments_b = [list(range(1001, 1001 + m)) for _, m in pairs]
    expected = []
    for a, b in zip(segments_a, segments_b):
        a, b = list(a), list(b)
        truncate_seq_pair(a, b, seq_length - 3)  # in place, as the original does
        ids = [CLS, *a, SEP, *b, SEP]
        expected.append(ids + [PAD] * (seq_length - len(ids)))
    out = _pack(seq_length, segments_a, segments_b)
    assert out["input_word_ids"] == expected
    # Both segments keep tokens whenever they have any.
    for (n, m), row in zip(pairs, out["input_word_ids"]):
        assert (n == 0) or any(0 < t <= n for t in row)
        assert (m == 0) or any(1000 < t < 2000 for t in row)


def test_single_segment_truncation_keeps_the_start():
    out = _pack(5, [list(range(1, 11))])
    assert out["input_word_ids"] == [[CLS, 1, 2, 3, SEP]]


def test_waterfall_truncation_fills_segments_in_order():
    out = _pack(8, [[1, 2, 3, 4, 5, 6]], [[7, 8, 9]], truncator="waterfall")
    assert out["input_word_ids"] == [[CLS, 1, 2, 3, 4, 5, SEP, SEP]]


def test_accepts_word_grouped_and_dense_segments():
    packer = BertPackInputs(6, CLS, SEP)
    words = tf.ragged.constant([[[1, 2], [3]]], dtype=tf.int32)
    assert packer(words)["input_word_ids"].numpy().tolist() == [[CLS, 1, 2, 3, SEP, PAD]]
    dense = tf.constant([[5, 6]], dtype=tf.int64)
    out = packer([dense, dense])
    assert out["input_word_ids"].numpy().tolist() == [[CLS, 5, 6, SEP, 5, SEP]]
    assert out["input_word_ids"].dtype == tf.int32


def test_seq_length_too_small_is_a_clear_error():
    with pytest.raises(ValueError, match="seq_length=1 cannot hold \\[CLS\\] and \\[SEP\\]"):
        BertPackInputs(1, CLS, SEP)
    packer = BertPackInputs(2, CLS, SEP)
    assert packer(tf.ragged.constant([[1, 2]]))["input_word_ids"].numpy().tolist() == [[CLS, SEP]]
    with pytest.raises(ValueError, match="seq_length=2 cannot hold the 3 special tokens of 2 segments"):
        packer([tf.ragged.constant([[1]]), tf.ragged.constant([[2]])])


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="truncator must be one of"):
        BertPackInputs(8, CLS, SEP, truncator="middle")
    packer = BertPackInputs(8, CLS, SEP)
    with pytest.raises(ValueError, match="same batch size, got \\[2, 1\\]"):
        packer([tf.ragged.constant([[1], [2]]), tf.ragged.constant([[3]])])
    with pytest.raises(ValueError, match="integer token ids"):
        packer(tf.ragged.constant([["a"]]))
    with pytest.raises(ValueError, match="shape \\[batch, tokens\\]"):
        packer(tf.constant([1, 2]))


def test_dynamic_batch_mismatch_fails_in_graph():
    packer = BertPackInputs(8, CLS, SEP)
    spec = tf.RaggedTensorSpec([None, None], tf.int32)
    packed = tf.function(lambda a, b: packer([a, b]), input_signature=[spec, spec])
    with pytest.raises(tf.errors.InvalidArgumentError, match="same batch size"):
        packed(tf.ragged.constant([[1], [2]]), tf.ragged.constant([[3]]))


def test_config_round_trip_and_keras_file(tmp_path):
    packer = BertPackInputs(12, CLS, SEP, padding_id=3, truncator="waterfall", name="pack")
    clone = BertPackInputs.from_config(packer.get_config())
    segments = [tf.ragged.constant([[1, 2, 3, 4, 5, 6, 7, 8]]), tf.ragged.constant([[9, 10, 11]])]
    for name, value in packer(segments).items():
        assert np.array_equal(clone(segments)[name], value)

    a = keras.Input(shape=(None,), dtype="int32", ragged=True)
    b = keras.Input(shape=(None,), dtype="int32", ragged=True)
    model = keras.Model([a, b], packer([a, b]))
    model.save(tmp_path / "packer.keras")
    reloaded = keras.saving.load_model(tmp_path / "packer.keras")
    for name, value in model(segments).items():
        assert np.array_equal(reloaded(segments)[name], value)


def _kept_lengths(lengths, budget, truncator):
    """How many tokens of each segment fit in `budget` positions (a plain reference)."""
    if truncator == "waterfall":
        kept = []
        for n in lengths:
            kept.append(min(n, budget - sum(kept)))
        return kept
    kept = [0] * len(lengths)  # round robin: one position to each unfinished segment in turn
    while sum(kept) < budget and any(k < n for k, n in zip(kept, lengths)):
        for i, n in enumerate(lengths):
            if kept[i] < n and sum(kept) < budget:
                kept[i] += 1
    return kept


@st.composite
def _packing_cases(draw):
    num_segments = draw(st.integers(1, 3))
    seq_length = draw(st.integers(num_segments + 1, 40))
    lengths = draw(st.lists(st.lists(st.integers(0, 45), min_size=num_segments, max_size=num_segments),
                            min_size=120, max_size=160))
    # Distinct ids (all in a 30,000-token vocabulary) show which tokens were kept.
    rows = [[[5 + 50 * (3 * r + i) + k for k in range(n)] for i, n in enumerate(row)]
            for r, row in enumerate(lengths)]
    truncator = draw(st.sampled_from(["round_robin", "waterfall"]))
    return seq_length, truncator, draw(st.sampled_from([tf.int32, tf.int64])), rows


def test_packing_generated_batches():
    # 20% of the profile's examples (tests/conftest.py): 20 in the suite, 200 when thorough.
    @settings(max_examples=settings.default.max_examples * 20 // 100, deadline=None, derandomize=True, database=None)
    @given(_packing_cases())
    def check(case):
        seq_length, truncator, dtype, rows = case
        num_segments = len(rows[0])
        packer = BertPackInputs(seq_length, CLS, SEP, padding_id=PAD, truncator=truncator)
        segments = [
            tf.RaggedTensor.from_row_lengths(
                tf.constant([t for row in rows for t in row[i]], dtype), [len(row[i]) for row in rows]
            )
            for i in range(num_segments)
        ]
        out = packer(segments if num_segments > 1 else segments[0])
        assert all(v.shape == (len(rows), seq_length) and v.dtype == tf.int32 for v in out.values())
        word_ids, mask, type_ids = (out[k].numpy().tolist() for k in ("input_word_ids", "input_mask",
                                                                       "input_type_ids"))
        for row, words, row_mask, types in zip(rows, word_ids, mask, type_ids):
            kept = _kept_lengths([len(s) for s in row], seq_length - 1 - num_segments, truncator)
            expected, expected_types = [CLS], [0]
            for i, (segment, n) in enumerate(zip(row, kept)):
                expected += [*segment[:n], SEP]
                expected_types += [i] * (n + 1)
            padding = seq_length - len(expected)
            assert words == expected + [PAD] * padding
            assert row_mask == [1] * len(expected) + [0] * padding
            assert types == expected_types + [0] * padding

    check()


def _combine_segments_reference(segments, seq_length, truncator):
    """What BertPackInputs computed before: tensorflow_text's trimmer, combine_segments, pad_model_inputs."""
    import tensorflow_text as tf_text

    budget = seq_length - 1 - len(segments)
    if len(segments) == 1:
        trimmed = [segments[0][:, :budget]]
    else:
        trimmer = {"round_robin": tf_text.RoundRobinTrimmer, "waterfall": tf_text.WaterfallTrimmer}
        trimmed = trimmer[truncator](budget).trim(segments)
    word_ids, type_ids = tf_text.combine_segments(trimmed, CLS, SEP)
    input_word_ids, input_mask = tf_text.pad_model_inputs(word_ids, seq_length, pad_value=PAD)
    input_type_ids, _ = tf_text.pad_model_inputs(type_ids, seq_length, pad_value=0)
    return {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}


@pytest.mark.slow
@pytest.mark.parametrize("truncator", ["round_robin", "waterfall"])
def test_identical_to_combine_segments_on_random_batches(truncator):
    rng = np.random.default_rng(7)
    for trial in range(60):
        num_segments = 1 + trial % 3
        budget = [0, 1, int(rng.integers(2, 12))][trial % 3 if trial < 30 else 2]
        seq_length = budget + 1 + num_segments
        batch = int(rng.integers(1, 5))
        segments = [
            tf.ragged.constant(
                [list(rng.integers(1000, 2000, size=int(rng.choice([0, rng.integers(0, 15)]))))
                 for _ in range(batch)],
                dtype=tf.int32, ragged_rank=1,
            )
            for _ in range(num_segments)
        ]
        packer = BertPackInputs(seq_length, start_of_sequence_id=CLS, end_of_segment_id=SEP,
                                padding_id=PAD, truncator=truncator)
        got = packer(segments if num_segments > 1 else segments[0])
        want = _combine_segments_reference(segments, seq_length, truncator)
        for name in want:
            assert got[name].dtype == want[name].dtype, name
            np.testing.assert_array_equal(got[name].numpy(), want[name].numpy(), err_msg=name)


@pytest.mark.slow
@pytest.mark.subprocess
def test_packing_masking_and_protected_words_log_no_onednn_layout_error():
    # oneDNN logs a false "DT_INT64 ... AVX-512" error line for some integer concats and transposes;
    # packing, whole-word masking and special tokens in strings avoid them. One fresh process, as the
    # line is logged once per process.
    import os
    import subprocess
    import sys

    script = (
        "import tensorflow as tf\n"
        "from keras_bert_lite.text import BertTokenizer, mask_tokens\n"
        "from keras_bert_lite.text.packer import BertPackInputs\n"
        "packer = BertPackInputs(12, start_of_sequence_id=101, end_of_segment_id=102)\n"
        "segments = [tf.ragged.constant([[1, 2, 3], [4]]), tf.ragged.constant([[5, 6], [7, 8, 9, 10]])]\n"
        "for fn in (packer, tf.function(packer)):\n"
        "    print(fn(segments)['input_word_ids'].numpy().tolist())\n"
        "    print(fn(segments[0])['input_word_ids'].numpy().tolist())\n"
        "ids = tf.constant([[1, 7, 8, 9, 2, 0], [1, 7, 9, 2, 0, 0]])\n"
        "for continuation_ids in (None, [8]):\n"
        "    out = mask_tokens(ids, [1, 2], vocab_size=10, mask_token_id=3, special_token_ids=[0, 1, 2],\n"
        "                      selection_rate=0.5, max_predictions_per_seq=3, continuation_ids=continuation_ids)\n"
        "    print('masked', out['masked_lm_weights'].numpy().sum(axis=1).tolist())\n"
        "vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', '[unused3]', 'the', 'cat']\n"
        "tokenizer = BertTokenizer(vocab, special_tokens_in_strings=True, preserve_unused_tokens=True)\n"
        "texts = tf.constant(['the [MASK] cat', 'the [unused3] cat', ''])\n"
        "for fn in (tokenizer, tf.function(tokenizer.tokenize_with_offsets)):\n"
        "    print(tf.nest.map_structure(lambda t: t.to_list(), fn(texts)))\n"
    )
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1", TF_CPP_MIN_LOG_LEVEL="0")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                            timeout=300, check=True)
    assert "[101, 1, 2, 3, 102, 5, 6, 102, 0, 0, 0, 0]" in result.stdout
    masked = [line for line in result.stdout.splitlines() if line.startswith("masked")]
    assert masked[0] == "masked [2.0, 2.0]", result.stdout  # round(5 x 0.5), round(4 x 0.5)
    assert "[[6, 4, 7], [6, 5, 7], []]" in result.stdout
    assert "([[6, 4, 7], [6, 5, 7], []], [[0, 4, 11], [0, 4, 14], []], [[3, 10, 14], [3, 13, 17], []])" in result.stdout
    for line in ("DT_INT64", "only supported on AVX-512", "only on platforms with AVX-512"):
        assert line not in result.stderr, result.stderr
