"""What a release folder holds besides the weights: the model's config and the `vocab.txt` both
checkpoint formats ship, with its casing; read into a `BertPreprocessor` (`make_preprocessor`), or
checked (`resolve_vocabulary`) and published atomically (`publishing`) by the writers."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence

import keras
import tensorflow as tf

from keras_bert_lite.atomic import atomic_write
from keras_bert_lite.config import BertConfig
from keras_bert_lite.interop.mapping import has_masked_lm
from keras_bert_lite.text import SPECIAL_TOKENS, BertPreprocessor, BertTokenizer, load_vocabulary

VOCAB_NAME = "vocab.txt"

# Everything a writer accepts as the vocabulary of the folder it writes.
VocabularySource = str | os.PathLike | Sequence[str] | BertTokenizer | BertPreprocessor


def model_config(model: keras.Model) -> BertConfig:
    """The `BertConfig` of a `BertEncoder`, `BertPretrainer` or `BertMaskedLM`."""
    return model.encoder.config if has_masked_lm(model) else model.config


def lower_case_from_vocabulary(tokens: Sequence[str]) -> bool:
    """Whether a vocabulary is uncased: it is cased if any token other than the bracketed special
    ones (`[CLS]`, `[unused0]`, ...) has an upper-case letter, which lower-cased text could never
    reach."""
    return not any(token != token.lower() for token in tokens
                   if not (token.startswith("[") and token.endswith("]")))


def lower_case_for_folder(directory: str, tokens: Sequence[str]) -> bool:
    """The casing of a Google release folder, which has no setting for it.

    Google's names decide (`uncased_*` lower-cases; `cased_*` and `multi_cased_*` keep case);
    for other names, the vocabulary (see `lower_case_from_vocabulary`).
    """
    name = os.path.basename(os.path.normpath(directory)).lower()
    if "uncased" in name:
        return True
    if "cased" in name:
        return False
    return lower_case_from_vocabulary(tokens)


@dataclasses.dataclass(frozen=True)
class FolderVocabulary:
    """A vocabulary checked for writing next to a model.

    Attributes:
        tokens: the tokens in id order.
        lower_case: whether text is lower-cased (and accents stripped) before WordPiece.
        source: where the tokens came from, for messages.
    """

    tokens: tuple[str, ...]
    lower_case: bool
    source: str

    @property
    def text(self) -> str:
        """The `vocab.txt` contents: one token per line."""
        return "".join(f"{token}\n" for token in self.tokens)


def _check_lines(tokens: Sequence[str], source: str) -> None:
    """Every token must read back from `vocab.txt` as itself (as `load_vocabulary` reads lines)."""
    seen = set()
    for index, token in enumerate(tokens):
        try:
            lines = token.encode("utf-8").splitlines() if isinstance(token, str) else None
        except UnicodeEncodeError:  # a lone surrogate
            lines = None
        if lines is None or [line.decode("utf-8").strip() for line in lines] != [token]:
            raise ValueError(
                f"Vocabulary {source}: token {index} ({token!r}) cannot be a line of vocab.txt (it must be a "
                "non-empty string without line breaks or surrounding whitespace)."
            )
        if token in seen:
            raise ValueError(f"Vocabulary {source}: token {index} ({token!r}) appears twice.")
        seen.add(token)


def resolve_vocabulary(
    vocabulary: VocabularySource, config: BertConfig, lower_case: bool | None = None
) -> FolderVocabulary:
    """Checks a vocabulary for writing next to a model with `config`.

    Args:
        vocabulary: a `vocab.txt` path (local or `tf.io.gfile`), a list of tokens, a `BertTokenizer`
            or a `BertPreprocessor`.
        config: the model's config; the vocabulary may not have more tokens than `vocab_size`.
        lower_case: the casing; None takes the tokenizer's (for a tokenizer or preprocessor) or
            infers it from the tokens (see `lower_case_from_vocabulary`).

    Raises:
        TypeError: `vocabulary` is none of the accepted kinds.
        FileNotFoundError: no file at the path.
        ValueError: naming the source, for a token that cannot be a line of `vocab.txt`, a repeated
            token, a missing special token, or more tokens than the model's `vocab_size`.
    """
    if isinstance(vocabulary, BertPreprocessor):
        vocabulary = vocabulary.tokenizer
    if isinstance(vocabulary, BertTokenizer):
        tokens, known_case, source = vocabulary.vocabulary, vocabulary.lower_case, "of the tokenizer"
    elif isinstance(vocabulary, (str, os.PathLike)):
        source = os.fspath(vocabulary)
        tokens, known_case = load_vocabulary(source), None
    elif isinstance(vocabulary, Sequence) and not isinstance(vocabulary, bytes):
        tokens, known_case, source = list(vocabulary), None, "(token list)"
    else:
        raise TypeError(
            "vocabulary must be a vocab.txt path, a list of tokens, a BertTokenizer or a BertPreprocessor, "
            f"got {type(vocabulary).__name__}."
        )
    _check_lines(tokens, source)
    missing = [token for token in SPECIAL_TOKENS if token not in tokens]
    if missing:
        raise ValueError(f"Vocabulary {source} lacks the special token(s) {', '.join(missing)}.")
    if len(tokens) > config.vocab_size:
        raise ValueError(
            f"Vocabulary {source} has {len(tokens)} tokens but the model's vocab_size is {config.vocab_size}: "
            "its last ids would fall outside the embedding table."
        )
    if lower_case is None:
        lower_case = known_case if known_case is not None else lower_case_from_vocabulary(tokens)
    return FolderVocabulary(tuple(tokens), bool(lower_case), source)


@contextlib.contextmanager
def publishing(directory: str, files: Mapping[str, str | bytes]) -> Iterator[None]:
    """Writes `files` (name -> contents) into `directory` under temporary names, and publishes them
    in order (put the file that marks the folder complete last) when the block succeeds.

    Anything else the block writes atomically is published before these files; on an exception
    none of them appears.
    """
    names = list(files)
    with atomic_write(*(os.path.join(directory, name) for name in names)) as temporaries:
        for temporary, contents in zip(temporaries, files.values()):
            with tf.io.gfile.GFile(temporary, "wb" if isinstance(contents, bytes) else "w") as f:
                f.write(contents)
        yield


def make_preprocessor(
    vocab_file: str, config: BertConfig, seq_length: int, lower_case: bool, strip_accents: bool | None = None
) -> BertPreprocessor:
    """A `BertPreprocessor` for `vocab_file`, checked against the model's config (`strip_accents`
    None follows `lower_case`).

    Raises:
        FileNotFoundError: `vocab_file` does not exist.
        ValueError: `seq_length` exceeds `config.max_position_embeddings`, or the vocabulary has
            more tokens than `config.vocab_size` (its ids would fall outside the embedding table).
    """
    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"Vocabulary file not found: {vocab_file}")
    if not 2 < seq_length <= config.max_position_embeddings:
        raise ValueError(
            f"seq_length must be in [3, max_position_embeddings={config.max_position_embeddings}], "
            f"got {seq_length}."
        )
    preprocessor = BertPreprocessor(vocab_file, seq_length=seq_length, lower_case=lower_case, strip_accents=strip_accents)
    if preprocessor.tokenizer.vocab_size > config.vocab_size:
        raise ValueError(
            f"{vocab_file} has {preprocessor.tokenizer.vocab_size} tokens but the model's vocab_size is "
            f"{config.vocab_size}."
        )
    return preprocessor
