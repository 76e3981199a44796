"""normalize_text against the original's cleaning, lower-casing and accent stripping; source_spans."""

import pytest
import tensorflow as tf

from keras_bert_lite.text.normalization import normalize_text, source_spans


def _original_steps(tokenization, text, lower_case, strip_accents):
    """The original BasicTokenizer's steps before splitting: `_clean_text` (drops NUL, U+FFFD and
    control characters, writes each whitespace character as a space), `lower()`, `_run_strip_accents`."""
    basic = tokenization.BasicTokenizer(do_lower_case=lower_case)
    text = basic._clean_text(text)
    if lower_case:
        text = text.lower()
    return basic._run_strip_accents(text) if strip_accents else text


@pytest.mark.parametrize("lower_case, strip_accents",
                         [(True, None), (False, None), (True, False), (False, True)])
def test_normalize_text_matches_the_original_steps(edge_cases, original_tokenization, lower_case, strip_accents):
    """Equal to the original's, but for whitespace: kept as it is (the original writes a space), so
    that offsets can map back to the source."""
    whitespace = original_tokenization._is_whitespace
    got = normalize_text(tf.constant(edge_cases), lower_case, strip_accents).numpy()
    for text, normalized in zip(edge_cases, (g.decode("utf-8") for g in got)):
        expected = _original_steps(original_tokenization, text, lower_case,
                                   lower_case if strip_accents is None else strip_accents)
        assert "".join(" " if whitespace(c) else c for c in normalized) == expected, text
        assert [c for c in normalized if whitespace(c)] == [c for c in text if whitespace(c)], text


def test_source_spans_map_normalised_offsets_back_to_source_bytes():
    texts = ["Cafe\u0301 \x00ok", "İx", "plain"]
    # Normalised (uncased): "cafe ok", "i̇x" -> "ix", "plain".
    starts = tf.ragged.constant([[0, 5], [0, 1], [0]], tf.int64)
    ends = tf.ragged.constant([[4, 7], [1, 2], [5]], tf.int64)
    source_starts, source_ends = source_spans(tf.constant(texts), starts, ends, lower_case=True)
    words = [[t.encode()[s:e].decode() for s, e in zip(row_s, row_e)]
             for t, row_s, row_e in zip(texts, source_starts.to_list(), source_ends.to_list())]
    # The stripped accent belongs to its word; the removed NUL before "ok" does not start it.
    assert words == [["Cafe\u0301", "ok"], ["İ", "x"], ["plain"]]
