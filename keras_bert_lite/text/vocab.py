"""Learning a WordPiece vocabulary from a corpus (tensorflow-text's BERT vocab learner)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import tensorflow as tf

from keras_bert_lite.text.tokenizer import SPECIAL_TOKENS, normalize_text

_BATCH_SIZE = 1024
_BLANK = r"[\s\p{Z}]*"


def _vocab_learner():
    """tensorflow_text's WordPiece vocabulary learner, imported on use (~120 MB resident)."""
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

    return bert_vocab_from_dataset


def build_vocab(
    corpus: Iterable[str] | tf.data.Dataset,
    vocab_size: int = 8000,
    lower_case: bool = True,
    reserved_tokens: Sequence[str] = SPECIAL_TOKENS,
    output_file: str | None = None,
) -> list[str]:
    """Learns a BERT WordPiece vocabulary from raw text.

    Text is normalised exactly as `BertTokenizer` does (BERT's cleaning, and
    lower-casing plus accent stripping when `lower_case`), split into words on
    whitespace, punctuation and CJK characters, and handed to tensorflow-text's
    WordPiece learner. The result loads directly into `BertTokenizer`.

    Args:
      corpus: an iterable of strings (e.g. lines or sentences) or a
        `tf.data.Dataset` of scalar tf.string elements.
      vocab_size: the maximum vocabulary size (the learner aims for 95-100 % of it).
      lower_case: `True` for an uncased vocabulary.
      reserved_tokens: tokens placed first, in this order (ids 0, 1, ...).
      output_file: if given, the vocabulary is written there, one token per line.

    Returns:
      The tokens in id order: `reserved_tokens`, then every character seen (and
      its `##` form), then learned word pieces.

    Raises:
      ValueError: the corpus has no words, or `vocab_size` is smaller than the
        reserved tokens.

    Example:

    >>> vocab = build_vocab(["The cat sat on the mat.", "A dog sat too."], vocab_size=100)
    >>> vocab[:5]
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    """
    reserved_tokens = list(reserved_tokens)
    if vocab_size <= len(reserved_tokens):
        raise ValueError(
            f"vocab_size={vocab_size} leaves no room beside the {len(reserved_tokens)} reserved tokens."
        )
    if isinstance(corpus, tf.data.Dataset):
        if corpus.element_spec != tf.TensorSpec([], tf.string):
            raise ValueError(
                f"The corpus dataset must yield scalar tf.string elements, got {corpus.element_spec}."
            )
        dataset = corpus
    else:
        if isinstance(corpus, (str, bytes)):
            raise ValueError("corpus must be an iterable of strings, not a single string.")
        dataset = tf.data.Dataset.from_tensor_slices(tf.constant(list(corpus) or [""], tf.string))
    texts = (
        dataset.batch(_BATCH_SIZE)
        .map(lambda batch: normalize_text(batch, lower_case))
        .unbatch()
        .filter(lambda text: tf.logical_not(tf.strings.regex_full_match(text, _BLANK)))
    )
    if next(iter(texts.take(1)), None) is None:
        raise ValueError("The corpus is empty: it contains no words to learn a vocabulary from.")
    vocab = _vocab_learner().bert_vocab_from_dataset(
        texts.batch(_BATCH_SIZE).prefetch(tf.data.AUTOTUNE),
        vocab_size=vocab_size,
        reserved_tokens=reserved_tokens,
        # The text is already normalised; only split it into words.
        bert_tokenizer_params={"lower_case": False},
    )
    if output_file:
        with tf.io.gfile.GFile(output_file, "w") as f:
            f.write("".join(token + "\n" for token in vocab))
    return vocab
