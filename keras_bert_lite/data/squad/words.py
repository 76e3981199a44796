"""Word pieces with the byte span of the word each comes from, for mapping answers back to text.

The one place SQuAD reading and serving split words; everything else calls `tokenize_with_offsets`.
"""

from __future__ import annotations

import tensorflow as tf

# BERT's pre-tokenization: whitespace separates words and is dropped; every punctuation mark
# (ASCII symbols and Unicode P*) and every CJK ideograph is a word of its own.
_PUNCTUATION = r"[!-/:-@\[-`{-~\p{P}]"
_CJK = (
    r"[\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
    r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}]"
)
_KEEP_DELIMITERS = f"{_PUNCTUATION}|{_CJK}"
_DELIMITERS = rf"\s+|{_KEEP_DELIMITERS}"


def tokenize_with_offsets(tokenizer, strings: tf.Tensor) -> tuple[tf.RaggedTensor, ...]:
    """Word pieces of each string with the byte span of the word each piece belongs to.

    Words are split as BERT's basic tokenizer does (whitespace, punctuation, CJK), then each
    word is tokenized by `tokenizer`, so ids equal `tokenizer(strings)`. All pieces of a word
    share its span, so a span of pieces maps back to whole words of the original string.

    Args:
        tokenizer: a `keras_bert_lite.text.BertTokenizer` (or any layer mapping tf.string [N] to
            ragged int ids [N, (pieces)]).
        strings: tf.string [batch].

    Returns:
        (ids int32, starts int64, ends int64), each ragged [batch, (pieces)]; `starts`/`ends` are
        UTF-8 byte offsets into the original strings (end exclusive).
    """
    import tensorflow_text as tf_text  # loaded on use (~120 MB resident)

    words, starts, ends = tf_text.regex_split_with_offsets(strings, _DELIMITERS, _KEEP_DELIMITERS)
    pieces = tokenizer(words.flat_values)
    counts = pieces.row_lengths()
    per_row = tf.reduce_sum(words.with_flat_values(counts), axis=1)

    def regroup(values):
        return tf.RaggedTensor.from_row_lengths(values, per_row, validate=False)

    return (
        regroup(tf.cast(pieces.flat_values, tf.int32)),
        regroup(tf.repeat(starts.flat_values, counts)),
        regroup(tf.repeat(ends.flat_values, counts)),
    )

