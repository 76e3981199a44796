"""WordPiece vocabularies: reading and checking `vocab.txt` files, their form for tensorflow-text's WordPiece
trie, and learning one from a corpus."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import tensorflow as tf
from absl import logging

from keras_bert_lite.atomic import write_text_atomically
from keras_bert_lite.config import read_bytes
from keras_bert_lite.text.normalization import WHITESPACE, normalize_text

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SUFFIX_INDICATOR = "##"

# Fast WordPiece's limit for a vocabulary token, in UTF-8 bytes after the suffix indicator.
_MAX_TOKEN_BYTES = 256
# Normalisation removes U+FFFD, so a WordPiece token holding it never matches any text.
_NEVER_MATCHES = "\ufffd"

_BATCH_SIZE = 1024
_SHORT_FRACTION = 0.95  # the learner aims for 95-100 % of vocab_size; fewer means the corpus ran out
_BLANK = r"[\s\p{Z}]*"


def load_vocabulary(path: str) -> list[str]:
    """Reads a WordPiece `vocab.txt`: one token per line, the line number is the id.

    Args:
        path: local or `tf.io.gfile` path (e.g. `gs://...`) of the vocabulary file.

    Returns:
        The tokens, stripped of surrounding whitespace (as the original BERT code reads them), in id order.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: the file is empty, is not UTF-8, or has an empty or repeated token (the message names
            the line).
    """
    path, data = read_bytes(path, "Vocabulary file")
    tokens = []
    for line_number, raw in enumerate(data.splitlines(), start=1):
        try:
            tokens.append(raw.decode("utf-8").strip())
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{path}, line {line_number}: not valid UTF-8 ({e.reason} at byte {e.start})."
            ) from None
    return validate_vocabulary(tokens, source=path)


def validate_vocabulary(tokens: Sequence[str], source: str) -> list[str]:
    """Checks that `tokens` are non-empty, unique strings; errors name `source` and the line (id + 1).

    Args:
        tokens: the vocabulary in id order.
        source: where the tokens come from (a file name, or "(token list)"), for error messages.

    Returns:
        The tokens as a list.

    Raises:
        ValueError: the vocabulary is empty, or a token is not a string, is empty or repeats another.
    """
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


def wordpiece_trie_tokens(tokens: Sequence[str], max_chars_per_token: int, source: str) -> list[str]:
    """The tokens as tensorflow-text's fast WordPiece trie takes them, ids unchanged.

    The trie refuses tokens holding a NUL, tokens over 256 bytes, and vocabularies without a plain
    whole-word token, all of which the original tokenizer accepts. Tokens the original can never produce
    (holding a character that normalisation removes, or longer than any word that is not [UNK]) become
    placeholders that match no text, exactly as unreachable as they were; one more placeholder after the
    last id gives the trie a whole-word token. Only a long token that real text could reach is an error.

    Args:
        tokens: the vocabulary in id order.
        max_chars_per_token: the tokenizer's word length limit (longer words become [UNK]).
        source: where the tokens come from, for error messages.

    Returns:
        The trie's vocabulary: `tokens` with placeholders, plus one placeholder.

    Raises:
        ValueError: naming `source` and the line of a token over 256 bytes (after "##") that a word within
            `max_chars_per_token` could match.
    """
    # A token that normalisation changes holds a character it removes.
    cleaned = normalize_text(tf.constant(tokens, tf.string), lower_case=False, strip_accents=False).numpy()
    trie_tokens = []
    for line_number, (token, clean) in enumerate(zip(tokens, cleaned), start=1):
        word = token.removeprefix(SUFFIX_INDICATOR)
        if token not in SPECIAL_TOKENS and clean != token.encode("utf-8"):
            token = f"{_NEVER_MATCHES}{line_number}"
        elif len(word.encode("utf-8")) > _MAX_TOKEN_BYTES:
            if len(word) <= max_chars_per_token:
                raise ValueError(
                    f"Vocabulary {source}, line {line_number}: token {token[:24]!r}... is "
                    f"{len(word.encode('utf-8'))} bytes long; tensorflow-text's WordPiece takes at most "
                    f"{_MAX_TOKEN_BYTES} bytes per token (after '{SUFFIX_INDICATOR}'). Remove or shorten it, "
                    f"or set max_chars_per_token below its {len(word)} characters."
                )
            token = f"{_NEVER_MATCHES}{line_number}"
        trie_tokens.append(token)
    return [*trie_tokens, _NEVER_MATCHES]


def build_vocab(
    corpus: Iterable[str] | tf.data.Dataset,
    vocab_size: int = 8000,
    lower_case: bool = True,
    reserved_tokens: Sequence[str] = SPECIAL_TOKENS,
    output_file: str | None = None,
) -> list[str]:
    """Learns a BERT WordPiece vocabulary from raw text.

    Text is normalised exactly as `BertTokenizer` does (BERT's cleaning, and lower-casing plus accent
    stripping when `lower_case`), every kind of whitespace becomes a space (the learner's own word
    splitting only knows ASCII whitespace, and a token holding a no-break space would not survive being
    written to a file and read back), and the words (split on whitespace, punctuation and CJK characters)
    go to tensorflow-text's WordPiece learner. The result loads directly into `BertTokenizer`.

    Args:
        corpus: an iterable of strings (e.g. lines or sentences) or a `tf.data.Dataset` of scalar
            tf.string elements.
        vocab_size: the maximum vocabulary size (the learner aims for 95-100 % of it; a corpus
            yielding fewer than 95 % is logged as a warning with the size reached).
        lower_case: `True` for an uncased vocabulary.
        reserved_tokens: tokens placed first, in this order (ids 0, 1, ...).
        output_file: if given, the vocabulary is written there (atomically), one token per line.

    Returns:
        The tokens in id order: `reserved_tokens`, then every character seen (and its `##` form), then
        learned word pieces.

    Raises:
        ValueError: the corpus has no words, or `vocab_size` is smaller than the reserved tokens.

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
    if isinstance(corpus, (str, bytes)):
        raise ValueError("corpus must be an iterable of strings, not a single string.")
    if not isinstance(corpus, tf.data.Dataset):
        corpus = tf.data.Dataset.from_tensor_slices(tf.constant(list(corpus) or [""], tf.string))
    elif corpus.element_spec != tf.TensorSpec([], tf.string):
        raise ValueError(
            f"The corpus dataset must yield scalar tf.string elements, got {corpus.element_spec}."
        )

    def normalize(batch):
        return tf.strings.regex_replace(normalize_text(batch, lower_case), WHITESPACE, " ")

    texts = (
        corpus.batch(_BATCH_SIZE)
        .map(normalize)
        .unbatch()
        .filter(lambda text: tf.logical_not(tf.strings.regex_full_match(text, _BLANK)))
    )
    if next(iter(texts.take(1)), None) is None:
        raise ValueError("The corpus is empty: it contains no words to learn a vocabulary from.")
    # tensorflow_text's learner, imported on use (~120 MB resident).
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset as learner

    vocab = learner.bert_vocab_from_dataset(
        texts.batch(_BATCH_SIZE).prefetch(tf.data.AUTOTUNE),
        vocab_size=vocab_size,
        reserved_tokens=reserved_tokens,
        # The text is already normalised; only split it into words.
        bert_tokenizer_params={"lower_case": False},
    )
    if len(vocab) < _SHORT_FRACTION * vocab_size:
        logging.warning("build_vocab: the corpus yields %d tokens, fewer than vocab_size=%d: it has too few "
                        "distinct words and characters for more; more text gives a larger vocabulary.",
                        len(vocab), vocab_size)
    if output_file:
        write_text_atomically(output_file, "".join(token + "\n" for token in vocab))
    return vocab
