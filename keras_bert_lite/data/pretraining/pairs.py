"""Next-sentence-prediction pairs from tokenized documents, following BERT's original algorithm.

For each document (in `dupe_factor` passes over the shuffled corpus) sentences are accumulated
until they reach a target length (`max_seq_length - 3`, or with probability `short_seq_prob` a
random shorter length); segment A is a random prefix of the accumulated sentences and segment B
is, half of the time, the rest ("IsNext"), otherwise a span from a random other document
("NotNext", and the unused sentences are put back). Pairs longer than `max_seq_length - 3` are
truncated by removing tokens one at a time from the longer segment, randomly at its front or
back. The random draws are made in the same order as the original `create_pretraining_data.py`,
so the same seed and documents give the same pairs.

Example:

    >>> import random
    >>> documents = [[[7, 8], [9]], [[10, 11, 12], [13], [14, 15]]]
    >>> pairs, _ = create_pair_instances(documents, max_seq_length=16, dupe_factor=1,
    ...                                   short_seq_prob=0.1, rng=random.Random(5))
    >>> [(p.tokens_a, p.tokens_b, p.is_random_next) for p in pairs]
    [([10, 11, 12], [13, 14, 15], False), ([7, 8], [9], False)]
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

# [CLS] A [SEP] B [SEP]
NUM_SPECIAL_TOKENS = 3

Document = Sequence[Sequence[int]]


class PairInstance(NamedTuple):
    """One sentence pair before masking.

    Attributes:
        tokens_a: token ids of segment A (list of int, non-empty).
        tokens_b: token ids of segment B (list of int, non-empty).
        is_random_next: True if B comes from another document (NSP label 1, "NotNext").
    """

    tokens_a: list[int]
    tokens_b: list[int]
    is_random_next: bool


def create_pair_instances(
    documents: Sequence[Document],
    max_seq_length: int,
    dupe_factor: int,
    short_seq_prob: float,
    rng: random.Random,
) -> tuple[list[PairInstance], int]:
    """Creates the NSP pairs of a corpus, shuffled.

    Args:
        documents: documents, at least one, each a non-empty list of non-empty sentences of token ids.
        max_seq_length: length of a packed example including [CLS] and two [SEP]; at least 5
            (`create_pretraining_data` checks both).
        dupe_factor: number of passes over the corpus (each pass draws new pairs).
        short_seq_prob: probability that a document pass uses a shorter random target length.
        rng: the random source; it is advanced.

    Returns:
        (pairs, short_passes): the shuffled pairs and the number of document passes that used a
        shorter target length.
    """
    max_num_tokens = max_seq_length - NUM_SPECIAL_TOKENS
    documents = list(documents)
    rng.shuffle(documents)
    pairs: list[PairInstance] = []
    short_passes = 0
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            target_length = max_num_tokens
            if rng.random() < short_seq_prob:
                target_length = rng.randint(2, max_num_tokens)
                short_passes += 1
            pairs += _document_pairs(documents, index, target_length, max_num_tokens, rng)
    rng.shuffle(pairs)
    return pairs, short_passes


def _document_pairs(
    documents: list[Document], index: int, target_length: int, max_num_tokens: int, rng: random.Random
) -> list[PairInstance]:
    """The pairs of one pass over documents[index]."""
    document = documents[index]
    pairs = []
    chunk: list[Sequence[int]] = []
    chunk_length = 0
    position = 0
    while position < len(document):
        chunk.append(document[position])
        chunk_length += len(document[position])
        if position == len(document) - 1 or chunk_length >= target_length:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            is_random_next = len(chunk) == 1 or rng.random() < 0.5
            if is_random_next:
                tokens_b = _random_span(documents, index, target_length - len(tokens_a), rng)
                position -= len(chunk) - a_end  # put the unused sentences back
            else:
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
            pairs.append(PairInstance(tokens_a, tokens_b, is_random_next))
            chunk = []
            chunk_length = 0
        position += 1
    return pairs


def _random_span(documents: list[Document], index: int, target_length: int, rng: random.Random) -> list[int]:
    """Consecutive sentences from a random other document, at least target_length tokens if possible."""
    for _ in range(10):
        other = rng.randint(0, len(documents) - 1)
        if other != index:
            break
    document = documents[other]
    tokens: list[int] = []
    for sentence in document[rng.randint(0, len(document) - 1) :]:
        tokens += sentence
        if len(tokens) >= target_length:
            break
    return tokens


def truncate_pair(tokens_a: list[int], tokens_b: list[int], max_num_tokens: int, rng: random.Random) -> None:
    """Shortens the pair in place to max_num_tokens, one token at a time from the longer segment.

    Each removal takes the segment's first or last token with equal probability; on a tie,
    segment B is shortened.
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        del longer[0 if rng.random() < 0.5 else -1]
