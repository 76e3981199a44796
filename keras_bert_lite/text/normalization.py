"""BERT's text normalisation in the TensorFlow graph, and the map from normalised back to source bytes.

`normalize_text` does the original `BasicTokenizer`'s steps with core string ops, because tensorflow-text's
own BERT normaliser case-folds and applies compatibility decomposition ("…" would become "...", "ß" "ss").
"""

from __future__ import annotations

import tensorflow as tf

# Text that needs no Unicode processing: tab, newline, carriage return and printable ASCII.
PLAIN_ASCII = r"[\t\n\r\x20-\x7e]*"
# Characters the original tokenizer deletes: NUL, U+FFFD and every control (Cc) or format (Cf) character
# except tab, newline and carriage return.
REMOVED_CHARS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\x{fffd}]"
# Characters that separate words and are dropped: the original's whitespace (tab, newline, carriage return
# and the space separators) and the line and paragraph separators Python's `str.split` also splits on.
WHITESPACE = r"[\t\n\r\p{Zs}\p{Zl}\p{Zp}]"
# CJK ideographs, each a word of its own (the original's `_is_chinese_char`).
CJK = (
    r"[\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
    r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}]"
)
_COMBINING_MARKS = r"\p{Mn}"


def normalize_text(strings: tf.Tensor, lower_case: bool, strip_accents: bool | None = None) -> tf.Tensor:
    """BERT's text normalisation for a string tensor of any shape.

    Invalid UTF-8 sequences, NUL, U+FFFD and control/format characters (other than tab, newline and
    carriage return) are removed. With `lower_case` the text is lower-cased (Python `str.lower` rules);
    with `strip_accents` it is NFD-decomposed and all non-spacing combining marks (accents) are dropped.

    Args:
        strings: tf.string tensor.
        lower_case: whether to lower-case (uncased models).
        strip_accents: whether to strip accents; `None` follows `lower_case`, as in the original BERT
            code, where the two always go together (Hugging Face lets them differ).

    Returns:
        tf.string tensor of the same shape.
    """
    if strip_accents is None:
        strip_accents = lower_case
    strings = tf.strings.unicode_transcode(
        strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    strings = tf.strings.regex_replace(strings, REMOVED_CHARS, "")
    if lower_case:
        strings = tf.strings.lower(strings, encoding="utf-8")
    if strip_accents:
        import tensorflow_text as tf_text  # loaded on use (~120 MB resident)

        strings = tf_text.normalize_utf8(strings, "NFD")
        strings = tf.strings.regex_replace(strings, _COMBINING_MARKS, "")
    return strings


def _normalized_lengths(codepoints: tf.Tensor, lower_case: bool, strip_accents: bool | None) -> tf.Tensor:
    """UTF-8 byte length (int64) of each character [N] after `normalize_text`, one character at a time."""
    ascii_removed = ((codepoints < 0x20) & (codepoints != 0x09) & (codepoints != 0x0A)
                     & (codepoints != 0x0D)) | (codepoints == 0x7F)
    lengths = tf.where(ascii_removed, tf.constant(0, tf.int64), tf.constant(1, tf.int64))
    # Only characters outside ASCII can change length (removed, lower-cased or decomposed).
    wide = tf.where(codepoints >= 0x80)
    chars = tf.strings.unicode_encode(tf.gather_nd(codepoints, wide)[:, tf.newaxis], "UTF-8")
    wide_lengths = tf.strings.length(normalize_text(chars, lower_case, strip_accents))
    return tf.tensor_scatter_nd_update(lengths, wide, tf.cast(wide_lengths, tf.int64))


def source_spans(
    strings: tf.Tensor,
    starts: tf.RaggedTensor,
    ends: tf.RaggedTensor,
    lower_case: bool,
    strip_accents: bool | None = None,
) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
    """Maps byte spans in `normalize_text(strings)` back to byte spans in `strings`.

    A span starts where the first source character that produced its first byte starts, and ends where the
    first source character producing a byte after the span starts (or at the end of the string): characters
    that normalise to nothing (removed controls, stripped accents) right after a span belong to it, so a
    span of a decomposed "café" covers its accent.

    Args:
        strings: tf.string [batch], the source strings.
        starts: int64 ragged [batch, (spans)], span starts in the normalised strings.
        ends: int64 ragged [batch, (spans)], span ends (exclusive) in the normalised strings.
        lower_case: as given to `normalize_text`.
        strip_accents: as given to `normalize_text`.

    Returns:
        (starts, ends): int64 ragged [batch, (spans)], byte offsets into `strings`, end exclusive.
    """
    codepoints, char_starts = tf.strings.unicode_decode_with_offsets(
        strings, "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    string_bytes = tf.cast(tf.strings.length(strings), tf.int64)
    string_base = tf.cumsum(string_bytes, exclusive=True)
    # Offsets over the whole batch, so one sorted search serves every row.
    flat_char_starts = tf.concat(
        [char_starts.flat_values + tf.gather(string_base, codepoints.value_rowids()),
         tf.reduce_sum(string_bytes, keepdims=True)],
        axis=0,
    )
    lengths = codepoints.with_flat_values(
        _normalized_lengths(codepoints.flat_values, lower_case, strip_accents)
    )
    normalized_ends = tf.cumsum(lengths.flat_values)
    normalized_base = tf.cumsum(tf.reduce_sum(lengths, axis=1), exclusive=True)

    def to_source(offsets: tf.RaggedTensor) -> tf.RaggedTensor:
        rows = offsets.value_rowids()
        # The first character whose normalised bytes extend past the offset holds that byte.
        char = tf.searchsorted(
            normalized_ends, offsets.flat_values + tf.gather(normalized_base, rows), side="right",
            out_type=tf.int64,
        )
        source = tf.gather(flat_char_starts, char) - tf.gather(string_base, rows)
        return offsets.with_flat_values(tf.minimum(source, tf.gather(string_bytes, rows)))

    return to_source(starts), to_source(ends)
