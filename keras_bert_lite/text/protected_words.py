"""Words kept whole before WordPiece: special tokens written in text, and Google's `[unusedN]` words."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import tensorflow as tf

from keras_bert_lite.text.normalization import CJK, WHITESPACE, normalize_text
from keras_bert_lite.text.vocab import SPECIAL_TOKENS

# Words Google's `preserve_unused_tokens` keeps whole (when in the vocabulary), as its `_UNUSED_TOKEN_RE`.
_UNUSED_TOKEN = re.compile(r"\[unused\d+\]")
_UNUSED_CANDIDATE = r"\[unused\p{Nd}+\]"
_SPECIAL_PATTERN = "|".join(re.escape(token) for token in SPECIAL_TOKENS)


def _lookup(
    strings: tf.Tensor, candidate_pattern: str, tokens: Sequence[str], ids: Sequence[int]
) -> tf.Tensor:
    """Id (int32 [N]) of each of strings [N] found in the small list `tokens`, else -1.

    Only strings fully matching `candidate_pattern` (rare) are compared with every token.
    """
    candidates = tf.where(tf.strings.regex_full_match(strings, candidate_pattern))
    hits = tf.equal(tf.gather_nd(strings, candidates)[:, tf.newaxis], tf.constant(tokens)[tf.newaxis, :])
    found = tf.gather(tf.constant(ids, tf.int32), tf.argmax(hits, axis=1))
    found = tf.where(tf.reduce_any(hits, axis=1), found, -1)
    return tf.tensor_scatter_nd_update(tf.fill(tf.shape(strings), -1), candidates, found)


class ProtectedWords:
    """Splits text into parts, each either a word kept whole (with its id) or text for WordPiece.

    Special tokens (`[MASK]`, ...) are matched anywhere in the raw text, as Hugging Face matches its
    special tokens before normalising. For `[unusedN]`, every whitespace-separated word (and CJK ideograph)
    becomes a part, because Google's tokenizer checks whole words after that split, with control characters
    removed and before lower-casing.

    Args:
        ids: the vocabulary, token -> id.
        special_tokens: keep `SPECIAL_TOKENS` written in the text whole.
        unused_tokens: keep words that are exactly a vocabulary token `[unusedN]` whole.
    """

    def __init__(self, ids: Mapping[str, int], special_tokens: bool, unused_tokens: bool):
        self._special = [(t, ids[t]) for t in SPECIAL_TOKENS] if special_tokens else []
        self._unused = [(t, i) for t, i in ids.items() if _UNUSED_TOKEN.fullmatch(t)] if unused_tokens else []
        split, keep = [], []
        if special_tokens:
            split.append(_SPECIAL_PATTERN)
            keep.append(_SPECIAL_PATTERN)
        if unused_tokens:
            split += [WHITESPACE + "+", CJK]
            keep.append(CJK)
        self._split_pattern, self._keep_pattern = "|".join(split), "|".join(keep)

    @property
    def enabled(self) -> bool:
        return bool(self._split_pattern)

    def split(
        self, strings: tf.Tensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor, tf.Tensor]:
        """Splits strings [N] into parts.

        Args:
            strings: tf.string [N].

        Returns:
            (parts, starts, ends, ids): the parts (tf.string ragged [N, (parts)]), their UTF-8 byte spans in
            `strings` (int64 ragged [N, (parts)], end exclusive) and, per part in `parts.flat_values`, the
            id of a word kept whole or -1 (int32 [num_parts]). Whitespace between words may be dropped, and
            NUL bytes read as U+0001 (normalisation removes both).
        """
        # tensorflow-text's regex split stops at a NUL byte; normalisation removes NUL and U+0001 alike.
        strings = tf.strings.regex_replace(strings, r"\x00", "\x01")
        if self._unused:
            parts, starts, ends = self._split_unused_rows_by_word(strings)
        else:
            parts, starts, ends = _regex_split(strings, self._split_pattern, self._keep_pattern)
        flat = parts.flat_values
        ids = tf.fill(tf.shape(flat), -1)
        if self._special:
            ids = tf.maximum(ids, _lookup(flat, _SPECIAL_PATTERN, *zip(*self._special)))
        if self._unused:
            cleaned = normalize_text(flat, lower_case=False, strip_accents=False)
            ids = tf.maximum(ids, _lookup(cleaned, _UNUSED_CANDIDATE, *zip(*self._unused)))
        return parts, starts, ends, ids

    def _split_unused_rows_by_word(
        self, strings: tf.Tensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """Splits only the rows that may hold `[unusedN]` into words; the others at special tokens only.

        One part per word makes every later step per part, so rows that cannot hold `[unusedN]` (none
        after control characters are removed) keep their text in as few parts as without the option.
        WordPiece's own whitespace and CJK split makes the ids the same either way.
        """
        by_word = tf.strings.regex_full_match(
            normalize_text(strings, lower_case=False, strip_accents=False), r"(?s).*\[unused.*"
        )
        slow = _regex_split(tf.where(by_word, strings, ""), self._split_pattern, self._keep_pattern)
        # Without special tokens, a pattern that never matches keeps each row whole (an empty row has no part).
        special = _SPECIAL_PATTERN if self._special else "a^"
        fast = _regex_split(tf.where(by_word, "", strings), special, special)
        # Each row takes its parts from the split it went to: row i of `slow`, or of `fast` after them.
        rows = tf.range(tf.size(strings))
        source = tf.where(by_word, rows, tf.size(strings) + rows)
        return tuple(tf.gather(tf.concat([a, b], axis=0), source) for a, b in zip(slow, fast))


def _regex_split(
    strings: tf.Tensor, pattern: str, keep_pattern: str
) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
    """`tf_text.regex_split_with_offsets` of strings [N]: parts, starts and ends, ragged [N, (parts)]."""
    import tensorflow_text as tf_text  # loaded on use (~120 MB resident)

    return tf_text.regex_split_with_offsets(strings, pattern, keep_pattern)
