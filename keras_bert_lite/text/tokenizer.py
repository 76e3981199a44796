"""BERT WordPiece tokenization inside the TensorFlow graph.

`BertTokenizer` reproduces the original BERT `tokenization.FullTokenizer`:
invalid characters and control characters are removed, CJK ideographs and
punctuation become words of their own, and (for uncased vocabularies) text is
lower-cased with Python's `str.lower` rules and stripped of accents (NFD, then
all combining marks removed) before greedy longest-match-first WordPiece.

The WordPiece step runs on tensorflow-text's fast WordPiece kernel. Its own
lower-casing differs from BERT's (it case-folds and applies compatibility
decomposition, so "…" would become "..." and "ß" would become "ss"), so the
normalisation is done here with core string ops instead. Lines made only of
printable ASCII (most English text) need nothing but ASCII lower-casing and
skip the Unicode normalisation entirely.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras
import tensorflow as tf

# tensorflow_text (~120 MB resident) is imported in the functions that use it, so that
# `import keras_bert_lite` (e.g. for training from TFRecords) does not load it.

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SUFFIX_INDICATOR = "##"

# Text that needs no Unicode processing: tab, newline, carriage return and
# printable ASCII.
_PLAIN_ASCII = r"[\t\n\r\x20-\x7e]*"
# Characters the original tokenizer deletes: NUL, U+FFFD and every control
# (Cc) or format (Cf) character except tab, newline and carriage return.
_REMOVED_CHARS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\x{fffd}]"
_COMBINING_MARKS = r"\p{Mn}"


def load_vocabulary(path: str) -> list[str]:
    """Reads a WordPiece `vocab.txt`: one token per line, the line number is the id.

    Args:
      path: local or `tf.io.gfile` path (e.g. `gs://...`) of the vocabulary file.

    Returns:
      The tokens, stripped of surrounding whitespace, in id order.

    Raises:
      FileNotFoundError: `path` does not exist.
      ValueError: the file is empty, is not UTF-8, or has an empty or repeated
        token (the message names the line).
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Vocabulary file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        raw_lines = f.read().splitlines()
    tokens = []
    for line_number, raw in enumerate(raw_lines, start=1):
        try:
            tokens.append(raw.decode("utf-8").strip())
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{path}, line {line_number}: not valid UTF-8 ({e.reason} at byte {e.start})."
            ) from None
    return _validate_tokens(tokens, source=path)


def _validate_tokens(tokens: Sequence[str], source: str) -> list[str]:
    tokens = list(tokens)
    if not tokens:
        raise ValueError(f"Vocabulary {source} is empty.")
    first_line = {}
    for line_number, token in enumerate(tokens, start=1):
        if not isinstance(token, str):
            raise ValueError(f"Vocabulary {source}, line {line_number}: {token!r} is not a string.")
        if not token:
            raise ValueError(f"Vocabulary {source}, line {line_number}: empty token.")
        if token in first_line:
            raise ValueError(
                f"Vocabulary {source}, line {line_number}: token {token!r} repeats line "
                f"{first_line[token]}."
            )
        first_line[token] = line_number
    return tokens


def normalize_text(strings: tf.Tensor, lower_case: bool) -> tf.Tensor:
    """BERT's text normalisation for a string tensor of any shape.

    Invalid UTF-8 sequences, NUL, U+FFFD and control/format characters (other
    than tab, newline and carriage return) are removed. With `lower_case`, the
    text is then lower-cased (Python `str.lower` rules), NFD-decomposed, and all
    non-spacing combining marks (accents) are dropped.

    Args:
      strings: tf.string tensor.
      lower_case: whether to lower-case and strip accents (uncased models).

    Returns:
      tf.string tensor of the same shape.
    """
    strings = tf.strings.unicode_transcode(
        strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    strings = tf.strings.regex_replace(strings, _REMOVED_CHARS, "")
    if lower_case:
        import tensorflow_text as tf_text

        strings = tf.strings.lower(strings, encoding="utf-8")
        strings = tf_text.normalize_utf8(strings, "NFD")
        strings = tf.strings.regex_replace(strings, _COMBINING_MARKS, "")
    return strings


def _as_string_batch(inputs) -> tf.Tensor:
    strings = tf.convert_to_tensor(inputs)
    if strings.dtype != tf.string:
        raise TypeError(f"BertTokenizer expects tf.string input, got {strings.dtype.name}.")
    if strings.shape.rank not in (0, 1):
        raise ValueError(
            f"BertTokenizer expects a scalar or a [batch] vector of strings, got shape {strings.shape}."
        )
    return strings


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertTokenizer(keras.layers.Layer):
    """Strings to BERT WordPiece ids, identical to the original `FullTokenizer`.

    Args:
      vocabulary: path of a `vocab.txt` (one token per line) or the list of
        tokens. It must contain `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and `[MASK]`.
      lower_case: lower-case and strip accents (uncased vocabularies); `False`
        for cased vocabularies.
      max_chars_per_token: words longer than this (in characters, after
        normalisation and punctuation splitting) become `[UNK]`. Hugging Face
        and tensorflow-text use 100; the original BERT code uses 200.
      **kwargs: standard layer arguments (`name`, ...).

    Call arguments:
      inputs: tf.string tensor of shape [batch] (or a scalar). Invalid UTF-8
        bytes are dropped, like the original's `decode("utf-8", "ignore")`.

    Returns:
      `tf.RaggedTensor` int32 of shape [batch, (num_tokens)] (or [(num_tokens)]
      for a scalar): the word pieces of all words, in order, without special
      tokens.

    Example:

    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...                            "the", "cat", "sat", "##s", "."])
    >>> tokenizer(["The cats sat."]).to_list()
    [[5, 6, 8, 7, 9]]
    """

    def __init__(
        self,
        vocabulary: str | Sequence[str],
        lower_case: bool = True,
        max_chars_per_token: int = 100,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # Strings pass through unchanged; there are no weights to build.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

        if isinstance(vocabulary, (str, os.PathLike)):
            source = os.fspath(vocabulary)
            tokens = load_vocabulary(source)
        else:
            source = "(token list)"
            tokens = _validate_tokens(vocabulary, source)
        missing = [t for t in SPECIAL_TOKENS if t not in tokens]
        if missing:
            raise ValueError(
                f"Vocabulary {source} lacks the special token(s) {', '.join(missing)}; "
                f"a BERT vocabulary needs all of {', '.join(SPECIAL_TOKENS)}."
            )
        if max_chars_per_token < 1:
            raise ValueError(f"max_chars_per_token must be >= 1, got {max_chars_per_token}.")

        self._tokens = tuple(tokens)
        self._ids = {token: i for i, token in enumerate(tokens)}
        self.lower_case = bool(lower_case)
        self.max_chars_per_token = int(max_chars_per_token)

        # Fast WordPiece limits words by bytes. With a limit of
        # `max_chars_per_token` bytes it is exact for ASCII words; the rare lines
        # with non-ASCII text and an [UNK] are redone with a 4-bytes-per-character
        # limit and the character limit applied afterwards (`_redo_by_chars`).
        self._wordpiece = self._build_wordpiece(tokens, self.max_chars_per_token)
        self._wordpiece_wide = self._build_wordpiece(tokens, 4 * self.max_chars_per_token)
        self._vocab_strings = tf.constant(tokens, dtype=tf.string)
        self._starts_word = tf.constant(
            [not t.startswith(SUFFIX_INDICATOR) for t in tokens], dtype=tf.bool
        )
        self._piece_chars = tf.constant(
            [len(t) - (len(SUFFIX_INDICATOR) if t.startswith(SUFFIX_INDICATOR) else 0)
             for t in tokens],
            dtype=tf.int32,
        )

    # ----------------------------------------------------------------- vocabulary
    @property
    def vocabulary(self) -> list[str]:
        """The tokens in id order."""
        return list(self._tokens)

    @property
    def vocab_size(self) -> int:
        return len(self._tokens)

    @property
    def pad_id(self) -> int:
        return self._ids["[PAD]"]

    @property
    def unk_id(self) -> int:
        return self._ids["[UNK]"]

    @property
    def cls_id(self) -> int:
        return self._ids["[CLS]"]

    @property
    def sep_id(self) -> int:
        return self._ids["[SEP]"]

    @property
    def mask_id(self) -> int:
        return self._ids["[MASK]"]

    def token_to_id(self, token: str) -> int:
        """Id of `token`; KeyError naming it if it is not in the vocabulary."""
        if token not in self._ids:
            raise KeyError(f"Token {token!r} is not in the vocabulary.")
        return self._ids[token]

    def id_to_token(self, token_id: int) -> str:
        """Token of `token_id`; IndexError if it is outside [0, vocab_size)."""
        if not 0 <= int(token_id) < len(self._tokens):
            raise IndexError(f"Token id {token_id} is outside [0, {len(self._tokens)}).")
        return self._tokens[int(token_id)]

    @staticmethod
    def _build_wordpiece(tokens, max_bytes_per_word):
        import tensorflow_text as tf_text

        return tf_text.FastWordpieceTokenizer(
            vocab=list(tokens),
            suffix_indicator=SUFFIX_INDICATOR,
            max_bytes_per_word=max_bytes_per_word,
            token_out_type=tf.int32,
            unknown_token="[UNK]",
        )

    # ------------------------------------------------------------------ tokenize
    def call(self, inputs):
        strings = _as_string_batch(inputs)
        if strings.shape.rank == 0:
            return self.call(strings[tf.newaxis])[0]
        plain = tf.strings.regex_full_match(strings, _PLAIN_ASCII)
        unicode_rows = tf.where(tf.logical_not(plain))
        fast = tf.strings.lower(strings) if self.lower_case else strings
        normalized = tf.tensor_scatter_nd_update(
            fast, unicode_rows, normalize_text(tf.gather_nd(strings, unicode_rows), self.lower_case)
        )
        pieces = self._wordpiece.tokenize(normalized)
        redo = tf.logical_and(
            tf.size(unicode_rows) > 0, tf.reduce_any(tf.equal(pieces.flat_values, self.unk_id))
        )
        return tf.cond(
            redo,
            lambda: self._redo_by_chars(normalized, tf.logical_not(plain), pieces),
            lambda: pieces,
        )

    def _redo_by_chars(self, normalized, unicode_rows, pieces):
        """Re-tokenizes non-ASCII rows holding [UNK] with the character limit."""
        has_unk = tf.reduce_any(tf.equal(pieces, self.unk_id), axis=-1)
        rows = tf.where(tf.logical_and(unicode_rows, has_unk))[:, 0]
        redone = self._wordpiece_wide.tokenize(tf.gather(normalized, rows))
        flat = redone.flat_values
        starts = tf.gather(self._starts_word, flat)
        word_index = tf.cumsum(tf.cast(starts, tf.int32)) - 1
        word_chars = tf.math.segment_sum(tf.gather(self._piece_chars, flat), word_index)
        too_long = tf.gather(word_chars > self.max_chars_per_token, word_index)
        # The first piece of an overlong word becomes [UNK]; its other pieces go.
        keep = tf.logical_or(starts, tf.logical_not(too_long))
        redone = tf.ragged.boolean_mask(
            redone.with_flat_values(tf.where(too_long, self.unk_id, flat)),
            redone.with_flat_values(keep),
        )
        batch_size = pieces.nrows()
        source = tf.tensor_scatter_nd_update(
            tf.range(batch_size), rows[:, tf.newaxis], batch_size + tf.range(tf.size(rows, tf.int64))
        )
        return tf.gather(tf.concat([pieces, redone], axis=0), source)

    def tokenize_words(self, inputs) -> tf.RaggedTensor:
        """Like `call`, but grouped by word.

        Args:
          inputs: tf.string tensor of shape [batch] (or a scalar).

        Returns:
          `tf.RaggedTensor` int32 of shape [batch, (words), (pieces)] (or
          [(words), (pieces)] for a scalar).
        """
        strings = _as_string_batch(inputs)
        if strings.shape.rank == 0:
            return self.tokenize_words(strings[tf.newaxis])[0]
        pieces = self.call(strings)
        starts = pieces.with_flat_values(tf.gather(self._starts_word, pieces.flat_values))
        words = tf.RaggedTensor.from_row_starts(
            pieces.flat_values, tf.where(starts.flat_values)[:, 0], validate=False
        )
        words_per_row = tf.reduce_sum(tf.cast(starts, tf.int64), axis=-1)
        return tf.RaggedTensor.from_row_lengths(words, words_per_row, validate=False)

    # ---------------------------------------------------------------- detokenize
    def detokenize(self, ids) -> tf.Tensor:
        """Word-piece ids back to text: pieces joined, `##` continuations glued.

        Args:
          ids: int tensor or `tf.RaggedTensor` of shape [batch, (tokens)]; `[PAD]`
            ids are skipped, so padded model inputs can be passed directly.

        Returns:
          tf.string tensor of shape [batch]: normalised words separated by single
          spaces (lower-casing, accents and spacing are not restored).
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(ids))
        ids = tf.ragged.boolean_mask(ids, tf.not_equal(ids, tf.cast(self.pad_id, ids.dtype)))
        tokens = tf.gather(self._vocab_strings, ids)
        joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(joined, " " + SUFFIX_INDICATOR, "")

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((inputs.shape[0], None), dtype="int32", ragged=True)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            vocabulary=list(self._tokens),
            lower_case=self.lower_case,
            max_chars_per_token=self.max_chars_per_token,
        )
        return config
