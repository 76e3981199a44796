"""BERT WordPiece tokenization inside the TensorFlow graph.

`BertTokenizer` reproduces the original BERT `tokenization.FullTokenizer`: text is cleaned and normalised
(`normalization.normalize_text`), CJK ideographs and punctuation become words of their own, and each word
is split by greedy longest-match-first WordPiece on tensorflow-text's fast WordPiece kernel, which also does
the word splitting (its end-to-end mode), so `call` and `tokenize_with_offsets` share one definition of a
word. Lines made only of printable ASCII (most English text) need nothing but ASCII lower-casing and skip
the Unicode normalisation.
"""

from __future__ import annotations

import os
import types
from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_bert_lite.text.normalization import PLAIN_ASCII, normalize_text, source_spans
from keras_bert_lite.text.protected_words import ProtectedWords
from keras_bert_lite.text.text_layer import TextLayer
from keras_bert_lite.text.vocab import (
    SPECIAL_TOKENS,
    SUFFIX_INDICATOR,
    load_vocabulary,
    validate_vocabulary,
    wordpiece_trie_tokens,
)

# tensorflow_text (~120 MB resident) is imported in the functions that use it, so that
# `import keras_bert_lite` (e.g. for training from TFRecords) does not load it.

def _on_string_batch(inputs, tokenize):
    """`tokenize(strings)` of `inputs` as tf.string [batch]; a scalar is tokenized as a batch of one,
    and each result unbatched."""
    strings = tf.convert_to_tensor(inputs)
    if strings.dtype != tf.string:
        raise TypeError(f"BertTokenizer expects tf.string input, got {strings.dtype.name}.")
    if strings.shape.rank not in (0, 1):
        raise ValueError(
            f"BertTokenizer expects a scalar or a [batch] vector of strings, got shape {strings.shape}."
        )
    if strings.shape.rank == 0:
        return tf.nest.map_structure(lambda t: t[0], tokenize(strings[tf.newaxis]))
    return tokenize(strings)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertTokenizer(TextLayer):
    """Strings to BERT WordPiece ids, identical to the original `FullTokenizer`.

    The defaults reproduce Google's tokenizer (and Hugging Face's `BertTokenizerFast` wherever the two
    agree; see the README for where they differ); the options add what either original offers.

    Args:
        vocabulary: path of a `vocab.txt` (one token per line) or the list of tokens. It must contain
            `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and `[MASK]`.
        lower_case: lower-case the text (uncased vocabularies); `False` for cased vocabularies.
        max_chars_per_token: words longer than this (in characters, after normalisation and punctuation
            splitting) become `[UNK]`. Hugging Face and tensorflow-text use 100; the original BERT code
            uses 200.
        strip_accents: drop accents (NFD, then non-spacing marks removed); `None` (default) follows
            `lower_case`, as the original does. Hugging Face's option of the same name.
        special_tokens_in_strings: `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and `[MASK]` written in the text
            (exactly so, anywhere) become their ids, as Hugging Face and KerasHub's
            `special_tokens_in_strings` do; by default they are text like any other ("[", "mask", "]").
        preserve_unused_tokens: a whitespace-separated word that is exactly a vocabulary token
            `[unusedN]` stays one token, as Google's `--preserve_unused_tokens` flag does.
        **kwargs: standard layer arguments (`name`, ...).

    Call arguments:
        inputs: tf.string tensor of shape [batch] (or a scalar). Invalid UTF-8 bytes are dropped, like
            the original's `decode("utf-8", "ignore")`.

    Returns:
        `tf.RaggedTensor` int32 of shape [batch, (num_tokens)] (or [(num_tokens)] for a scalar): the word
        pieces of all words, in order, without added special tokens.

    Example:

        >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
        ...                            "the", "cat", "sat", "##s", "."])
        >>> tokenizer(["The cats sat."]).to_list()
        [[5, 6, 8, 7, 9]]
    """

    _CONFIG_ARGS = (
        "vocabulary", "lower_case", "max_chars_per_token", "strip_accents", "special_tokens_in_strings",
        "preserve_unused_tokens",
    )

    def __init__(
        self,
        vocabulary: str | Sequence[str],
        lower_case: bool = True,
        max_chars_per_token: int = 100,
        strip_accents: bool | None = None,
        special_tokens_in_strings: bool = False,
        preserve_unused_tokens: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(vocabulary, (str, os.PathLike)):
            source = os.fspath(vocabulary)
            tokens = load_vocabulary(source)
        else:
            source = "(token list)"
            tokens = validate_vocabulary(vocabulary, source)
        missing = [t for t in SPECIAL_TOKENS if t not in tokens]
        if missing:
            raise ValueError(
                f"Vocabulary {source} lacks the special token(s) {', '.join(missing)}; "
                f"a BERT vocabulary needs all of {', '.join(SPECIAL_TOKENS)}."
            )
        if max_chars_per_token < 1:
            raise ValueError(f"max_chars_per_token must be >= 1, got {max_chars_per_token}.")

        # Read-only views: a tuple or dict set on a Keras layer is walked element by element by its
        # attribute tracking (about 0.35 CPU s for a 30,522-token vocabulary), these are not.
        self._ids = types.MappingProxyType({token: i for i, token in enumerate(tokens)})
        self._tokens = types.MappingProxyType(dict(enumerate(tokens)))
        self.vocab_size = len(tokens)
        special_ids = (self._ids[t] for t in SPECIAL_TOKENS)
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = special_ids
        self.lower_case = bool(lower_case)
        self.max_chars_per_token = int(max_chars_per_token)
        self.strip_accents = self.lower_case if strip_accents is None else bool(strip_accents)
        self.special_tokens_in_strings = bool(special_tokens_in_strings)
        self.preserve_unused_tokens = bool(preserve_unused_tokens)
        self._protected_words = ProtectedWords(
            self._ids, self.special_tokens_in_strings, self.preserve_unused_tokens
        )

        # Fast WordPiece limits words by bytes: `_redo_by_chars` applies the character limit.
        trie_tokens = wordpiece_trie_tokens(tokens, self.max_chars_per_token, source)
        self._wordpiece = self._build_wordpiece(trie_tokens, self.max_chars_per_token)
        self._wordpiece_wide = self._build_wordpiece(trie_tokens, 4 * self.max_chars_per_token)
        self._vocab_strings = tf.constant(tokens, dtype=tf.string)
        self._starts_word = tf.constant([not t.startswith(SUFFIX_INDICATOR) for t in tokens], dtype=tf.bool)
        self._piece_chars = tf.constant(
            [len(t.removeprefix(SUFFIX_INDICATOR)) for t in tokens], dtype=tf.int32
        )

    @property
    def vocabulary(self) -> list[str]:
        """The tokens in id order."""
        return list(self._tokens.values())

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

    def call(self, inputs):
        return _on_string_batch(inputs, lambda strings: self._tokenize(strings, with_offsets=False)[0])

    def tokenize_with_offsets(
        self, inputs
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """Word pieces with the byte span, in the original strings, of the word each piece belongs to.

        The words are BERT's (split on whitespace, punctuation and CJK ideographs, after the text is
        cleaned and normalised), found by the same ops as `call`, so the ids equal `self(inputs)`. All
        pieces of a word share its span, so any run of whole words maps back to a slice of the original
        string (as SQuAD answers need); characters dropped by normalisation right after a word belong
        to it (see `normalization.source_spans`).

        Args:
            inputs: tf.string tensor of shape [batch] (or a scalar).

        Returns:
            (ids, starts, ends): `tf.RaggedTensor`s of shape [batch, (pieces)] (or [(pieces)] for a
            scalar): int32 ids, and int64 UTF-8 byte offsets into the input strings (end exclusive).

        Example:

            >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cafe", "##s"])
            >>> ids, starts, ends = tokenizer.tokenize_with_offsets(["Cafés!"])
            >>> ids.to_list(), starts.to_list(), ends.to_list()
            ([[5, 6, 1]], [[0, 0, 6]], [[6, 6, 7]])
        """
        return _on_string_batch(inputs, lambda strings: self._tokenize(strings, with_offsets=True))

    def _tokenize(self, strings: tf.Tensor, with_offsets: bool) -> tuple[tf.RaggedTensor, ...]:
        """(ids,) of strings [N]; with `with_offsets`, (ids, starts, ends): word spans in `strings`."""
        if not self._protected_words.enabled:
            return self._word_pieces(strings, with_offsets)
        parts, part_starts, part_ends, protected = self._protected_words.split(strings)
        is_protected = protected >= 0
        pieces = self._word_pieces(tf.where(is_protected, "", parts.flat_values), with_offsets)
        if with_offsets:
            pieces = (pieces[0], *(
                offsets.with_flat_values(
                    offsets.flat_values + tf.gather(part_starts.flat_values, offsets.value_rowids())
                )
                for offsets in pieces[1:]
            ))
        # A protected part (blanked, so without pieces) takes its kept token by one gather, not a ragged
        # concat along axis 1, which makes oneDNN log a false "DT_INT64" error; parts regroup into strings.
        kept = (protected, part_starts.flat_values, part_ends.flat_values)
        n = tf.size(protected)
        source = tf.where(is_protected, n + tf.range(n), tf.range(n))
        return tuple(
            parts.with_flat_values(tf.gather(tf.concat([values, token[:, tf.newaxis]], axis=0), source))
            .merge_dims(1, 2)
            for values, token in zip(pieces, kept)
        )

    def _word_pieces(self, strings: tf.Tensor, with_offsets: bool) -> tuple[tf.RaggedTensor, ...]:
        """`_tokenize` without protected words."""
        plain = tf.strings.regex_full_match(strings, PLAIN_ASCII)
        unicode_rows = tf.where(tf.logical_not(plain))
        fast = tf.strings.lower(strings) if self.lower_case else strings
        unicode_text = tf.gather_nd(strings, unicode_rows)
        unicode_text = normalize_text(unicode_text, self.lower_case, self.strip_accents)
        normalized = tf.tensor_scatter_nd_update(fast, unicode_rows, unicode_text)

        def tokenize(wordpiece, texts):
            return wordpiece.tokenize_with_offsets(texts) if with_offsets else (wordpiece.tokenize(texts),)

        pieces = tokenize(self._wordpiece, normalized)
        redo = tf.logical_and(
            tf.size(unicode_rows) > 0, tf.reduce_any(tf.equal(pieces[0].flat_values, self.unk_id))
        )
        pieces = tf.cond(
            redo,
            lambda: self._redo_by_chars(normalized, tf.logical_not(plain), pieces, tokenize),
            lambda: pieces,
        )
        if not with_offsets:
            return pieces
        ids, starts, ends = pieces
        # Each piece gets the span of its word: the word's first start and last end.
        word = tf.cumsum(tf.cast(tf.gather(self._starts_word, ids.flat_values), tf.int64)) - 1
        starts = ids.with_flat_values(tf.gather(tf.math.segment_min(starts.flat_values, word), word))
        ends = ids.with_flat_values(tf.gather(tf.math.segment_max(ends.flat_values, word), word))
        # Printable-ASCII rows keep their byte offsets through normalisation; only the others are mapped.
        mapped = tf.where(tf.gather(tf.logical_not(plain), ids.value_rowids()))
        spans = source_spans(
            tf.gather_nd(strings, unicode_rows),
            *(tf.gather(offsets, unicode_rows[:, 0]) for offsets in (starts, ends)),
            self.lower_case,
            self.strip_accents,
        )
        return (ids, *(
            offsets.with_flat_values(
                tf.tensor_scatter_nd_update(offsets.flat_values, mapped, span.flat_values)
            )
            for offsets, span in zip((starts, ends), spans)
        ))

    def _redo_by_chars(self, normalized, unicode_rows, pieces, tokenize):
        """Re-tokenizes non-ASCII rows holding [UNK] with the character limit.

        Fast WordPiece limits words by bytes. With a limit of `max_chars_per_token` bytes it is exact for
        ASCII words; the rare rows with non-ASCII text and an [UNK] are redone here with a limit of 4 bytes
        per character, and the character limit is applied to the result.
        """
        has_unk = tf.reduce_any(tf.equal(pieces[0], self.unk_id), axis=-1)
        rows = tf.where(tf.logical_and(unicode_rows, has_unk))[:, 0]
        redone = tokenize(self._wordpiece_wide, tf.gather(normalized, rows))
        flat = redone[0].flat_values
        starts = tf.gather(self._starts_word, flat)
        word_index = tf.cumsum(tf.cast(starts, tf.int32)) - 1
        word_chars = tf.math.segment_sum(tf.gather(self._piece_chars, flat), word_index)
        too_long = tf.gather(word_chars > self.max_chars_per_token, word_index)
        # The first piece of an overlong word becomes [UNK] (spanning the whole word); its other pieces go.
        values = [tf.where(too_long, self.unk_id, flat)]
        if len(redone) == 3:
            word_ends = tf.gather(tf.math.segment_max(redone[2].flat_values, word_index), word_index)
            values += [redone[1].flat_values, tf.where(too_long, word_ends, redone[2].flat_values)]
        keep = redone[0].with_flat_values(tf.logical_or(starts, tf.logical_not(too_long)))
        batch_size = pieces[0].nrows()
        source = tf.tensor_scatter_nd_update(
            tf.range(batch_size), rows[:, tf.newaxis], batch_size + tf.range(tf.size(rows, tf.int64))
        )
        redone = [tf.ragged.boolean_mask(r.with_flat_values(value), keep) for r, value in zip(redone, values)]
        return tuple(tf.gather(tf.concat([old, new], axis=0), source) for old, new in zip(pieces, redone))

    def tokenize_words(self, inputs) -> tf.RaggedTensor:
        """Like `call`, but grouped by word.

        Args:
            inputs: tf.string tensor of shape [batch] (or a scalar).

        Returns:
            `tf.RaggedTensor` int32 of shape [batch, (words), (pieces)] (or [(words), (pieces)] for a
            scalar).
        """
        return _on_string_batch(inputs, self._words)

    def _words(self, strings: tf.Tensor) -> tf.RaggedTensor:
        pieces = self._tokenize(strings, with_offsets=False)[0]
        starts = pieces.with_flat_values(tf.gather(self._starts_word, pieces.flat_values))
        words = tf.RaggedTensor.from_row_starts(
            pieces.flat_values, tf.where(starts.flat_values)[:, 0], validate=False
        )
        words_per_row = tf.reduce_sum(tf.cast(starts, tf.int64), axis=-1)
        return tf.RaggedTensor.from_row_lengths(words, words_per_row, validate=False)

    def detokenize(self, ids) -> tf.Tensor:
        """Word-piece ids back to text: pieces joined, `##` continuations glued.

        Args:
            ids: int tensor or `tf.RaggedTensor` of shape [batch, (tokens)]; `[PAD]` ids are skipped, so
                padded model inputs can be passed directly.

        Returns:
            tf.string tensor of shape [batch]: normalised words separated by single spaces (lower-casing,
            accents and spacing are not restored).
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(ids))
        ids = tf.ragged.boolean_mask(ids, tf.not_equal(ids, tf.cast(self.pad_id, ids.dtype)))
        tokens = tf.gather(self._vocab_strings, ids)
        joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(joined, " " + SUFFIX_INDICATOR, "")

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((inputs.shape[0], None), dtype="int32", ragged=True)
