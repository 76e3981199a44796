"""normalize_text against the original's cleaning, lower-casing and accent stripping; source_spans."""

import unicodedata

import pytest
import tensorflow as tf

from keras_bert_lite.text.normalization import normalize_text, source_spans


def _reference(text, lower_case, strip_accents):
    """The original BasicTokenizer's `_clean_text`, `lower()` and `_run_strip_accents` (whitespace kept)."""
    text = "".join(c for c in text if not (c in "\x00\ufffd" or (
        unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n\r")))
    if lower_case:
        text = text.lower()
    if strip_accents:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    return text


@pytest.mark.parametrize("lower_case, strip_accents",
                         [(True, None), (False, None), (True, False), (False, True)])
def test_normalize_text_matches_the_original_steps(edge_cases, lower_case, strip_accents):
    expected = [_reference(t, lower_case, lower_case if strip_accents is None else strip_accents)
                for t in edge_cases]
    got = normalize_text(tf.constant(edge_cases), lower_case, strip_accents).numpy()
    assert [g.decode("utf-8") for g in got] == expected


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
