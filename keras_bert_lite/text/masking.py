"""Dynamic masked-language-model masking inside the TensorFlow graph.

Follows the original BERT `create_pretraining_data.py`: each sequence gets `min(max_predictions_per_seq,
max(1, round(num_tokens * selection_rate)))` predictions, where `num_tokens` counts every non-padding token
(special tokens included, as in the original); they are drawn uniformly from the non-special tokens (whole
words with `whole_word_masking`), and each chosen token is replaced by `[MASK]` 80 % of the time, by a
uniformly random vocabulary id 10 % of the time, and kept 10 % of the time.

All randomness comes from stateless random ops driven by an explicit seed, so a seed reproduces a mask exactly
(tensorflow-text's `RandomItemSelector` and `MaskValuesChooser` draw from unseeded global random state and
pick `ceil(n * rate)` items, so they are not used here).
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_bert_lite.text.text_layer import TextLayer
from keras_bert_lite.text.tokenizer import SUFFIX_INDICATOR, BertTokenizer, load_vocabulary

# The `mask_tokens` arguments a `MaskedLMMasker` holds as attributes of the same names.
_MASK_ARGS = (
    "vocab_size", "mask_token_id", "special_token_ids", "padding_id", "selection_rate", "mask_token_rate",
    "random_token_rate", "max_predictions_per_seq",
)

def mask_tokens(
    input_word_ids: tf.Tensor,
    seed: tf.Tensor,
    *,
    vocab_size: int,
    mask_token_id: int,
    special_token_ids: Sequence[int],
    padding_id: int = 0,
    selection_rate: float = 0.15,
    mask_token_rate: float = 0.8,
    random_token_rate: float = 0.1,
    max_predictions_per_seq: int = 20,
    continuation_ids: Sequence[int] | None = None,
) -> dict[str, tf.Tensor]:
    """Masks a padded batch of token ids (the function behind `MaskedLMMasker`).

    Args:
        input_word_ids: int32 [batch, seq_length] token ids, padded with `padding_id`.
        seed: int32/int64 tensor of shape [2] for the stateless random ops.
        vocab_size: random replacement ids are drawn from [0, vocab_size).
        mask_token_id: id of `[MASK]`.
        special_token_ids: ids that are never selected (`[CLS]`, `[SEP]`, ...).
        padding_id: id of `[PAD]`; never selected and not counted as a token.
        selection_rate: fraction of tokens to predict.
        mask_token_rate: fraction of the predicted tokens replaced by `[MASK]`.
        random_token_rate: fraction replaced by a random id (the rest is kept).
        max_predictions_per_seq: at most this many predictions per sequence.
        continuation_ids: ids of `##` word pieces; if given, whole words are masked.

    Returns:
        dict with `input_word_ids` (int32 [batch, seq_length], masked), `masked_lm_positions` and
        `masked_lm_ids` (int32 [batch, max_predictions_per_seq], ascending positions, zero-padded) and
        `masked_lm_weights` (float32, 1.0 for real predictions, 0.0 for padding).
    """
    ids = tf.cast(tf.convert_to_tensor(input_word_ids), tf.int32)
    if ids.shape.rank != 2:
        raise ValueError(f"input_word_ids must have shape [batch, seq_length], got {ids.shape}.")
    select_seed, choice_seed, random_id_seed = tf.unstack(
        tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=3)
    )
    is_token = tf.not_equal(ids, padding_id)
    unselectable = tf.constant(sorted({int(i) for i in special_token_ids} | {int(padding_id)}),
                               dtype=tf.int32)
    candidate = tf.logical_not(
        tf.reduce_any(tf.equal(ids[:, :, tf.newaxis], unselectable), axis=-1)
    )
    # float64, so that halves round (to even) exactly as Python's round() does.
    num_tokens = tf.reduce_sum(tf.cast(is_token, tf.float64), axis=1)
    num_to_predict = tf.minimum(
        tf.cast(max_predictions_per_seq, tf.int32),
        tf.maximum(1, tf.cast(tf.round(num_tokens * float(selection_rate)), tf.int32)),
    )
    if continuation_ids is None:
        # The `num_to_predict` candidates with the smallest random keys, per row.
        keys = tf.where(candidate, tf.random.stateless_uniform(tf.shape(candidate), select_seed), 2.0)
        rank = tf.argsort(tf.argsort(keys, axis=1, stable=True), axis=1, stable=True)
        selected = tf.logical_and(candidate, rank < num_to_predict[:, tf.newaxis])
    else:
        continuation_ids = tf.constant(sorted({int(i) for i in continuation_ids}), tf.int64)
        is_continuation = tf.scatter_nd(
            continuation_ids[:, tf.newaxis], tf.ones_like(continuation_ids, tf.bool), [vocab_size]
        )
        continuation = tf.logical_and(candidate, tf.gather(is_continuation, ids))
        selected = _select_whole_words(candidate, continuation, num_to_predict, select_seed)

    # The selected positions (ascending) and their ids, zero-padded to max_predictions_per_seq.
    shape = [None, max_predictions_per_seq]
    positions = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(tf.shape(ids)[1]), tf.shape(ids)), selected)
    labels = tf.ragged.boolean_mask(ids, selected).to_tensor(shape=shape)
    weights = tf.sequence_mask(positions.row_lengths(), max_predictions_per_seq)
    positions = positions.to_tensor(shape=shape)

    # 80 % [MASK], 10 % random id, 10 % unchanged, decided per token.
    choice = tf.random.stateless_uniform(tf.shape(ids), choice_seed)
    random_ids = tf.random.stateless_uniform(
        tf.shape(ids), random_id_seed, minval=0, maxval=vocab_size, dtype=tf.int32
    )
    replacement = tf.where(
        choice < mask_token_rate,
        mask_token_id,
        tf.where(choice < mask_token_rate + random_token_rate, random_ids, ids),
    )
    return {
        "input_word_ids": tf.where(selected, replacement, ids),
        "masked_lm_positions": positions,
        "masked_lm_ids": labels,
        "masked_lm_weights": tf.cast(weights, tf.float32),
    }


def _select_whole_words(candidate, continuation, num_to_predict, seed):
    """Whole words in random order, each taken if it still fits (the original's rule).

    A word is a candidate token that is not a `##` piece (or the first candidate of its row) with the `##`
    pieces that follow it; like the original, special tokens in between are skipped (a `##` piece right after
    `[SEP]` joins the last word before it).
    """
    first_candidate = tf.logical_and(
        candidate, tf.equal(tf.cumsum(tf.cast(candidate, tf.int32), axis=1, exclusive=True), 0)
    )
    starts = tf.logical_or(tf.logical_and(candidate, tf.logical_not(continuation)), first_candidate)
    word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # word number within the row
    in_word = tf.logical_and(candidate, word >= 0)
    # Tokens per word, float32 [batch, seq_length] (words are numbered below seq_length; others are not
    # counted). Float, as are the decisions, because oneDNN logs a false error when the scan below
    # transposes integers or booleans; the counts are small integers, exact in float32.
    seq_length = tf.shape(candidate)[1]
    word_size = tf.math.bincount(
        tf.where(in_word, word, seq_length), minlength=seq_length, maxlength=seq_length, axis=-1,
        dtype=tf.float32,
    )
    # Visit words in a random order; take each one that keeps the count within budget.
    keys = tf.where(word_size > 0, tf.random.stateless_uniform(tf.shape(word_size), seed), 2.0)
    order = tf.argsort(keys, axis=1, stable=True)
    budget = tf.cast(num_to_predict, tf.float32)

    def take_if_fits(state, size):
        count, _ = state
        take = tf.cast(tf.logical_and(size > 0, count + size <= budget), tf.float32)
        return count + take * size, take

    _, taken_in_order = tf.scan(
        take_if_fits,
        tf.transpose(tf.gather(word_size, order, batch_dims=1)),
        initializer=(tf.zeros_like(budget), tf.zeros_like(budget)),
    )
    taken = tf.gather(tf.transpose(taken_in_order) > 0, tf.argsort(order, axis=1), batch_dims=1)
    return tf.logical_and(in_word, tf.gather(taken, tf.maximum(word, 0), batch_dims=1))


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class MaskedLMMasker(TextLayer):
    """Masks BERT inputs on the fly for masked-language-model pre-training.

    A new mask is drawn at every call (dynamic masking), reproducibly from `seed`: the layer's seed state
    advances by one per call, so the n-th call of two maskers with the same seed gives the same mask (in
    `tf.data`, when the map runs sequentially). Works eagerly, in a `tf.function`, inside
    `tf.data.Dataset.map` on batched inputs, and inside Keras models. For explicit per-call seeds use the
    stateless `mask` method (or the `mask_tokens` function).

    Args:
        vocab_size, mask_token_id, special_token_ids, selection_rate, mask_token_rate, random_token_rate,
            max_predictions_per_seq, padding_id: as for `mask_tokens`.
        whole_word_masking: select whole words: a `##` piece goes with its word.
        vocabulary: the tokens (list) or `vocab.txt` path; needed for whole-word masking, to know which ids
            are `##` pieces.
        seed: int seed; `None` draws a random one.
        **kwargs: standard layer arguments.

    Call arguments:
        input_word_ids: int32 [batch, seq_length], padded with `padding_id`.

    Returns:
        The dict `mask_tokens` returns.

    Example:

        >>> masker = MaskedLMMasker(vocab_size=30522, mask_token_id=103,
        ...                         special_token_ids=[0, 101, 102], seed=1)
        >>> out = masker(tf.constant([[101, 2023, 2003, 1037, 3231, 102, 0, 0]]))
        >>> sorted(out)
        ['input_word_ids', 'masked_lm_ids', 'masked_lm_positions', 'masked_lm_weights']
    """

    _CONFIG_ARGS = (*_MASK_ARGS, "whole_word_masking", "vocabulary", "seed")

    def __init__(
        self,
        vocab_size: int,
        mask_token_id: int,
        special_token_ids: Sequence[int],
        selection_rate: float = 0.15,
        mask_token_rate: float = 0.8,
        random_token_rate: float = 0.1,
        max_predictions_per_seq: int = 20,
        whole_word_masking: bool = False,
        vocabulary: str | Sequence[str] | None = None,
        seed: int | None = None,
        padding_id: int = 0,
        **kwargs,
    ):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        if not 0.0 < selection_rate <= 1.0:
            raise ValueError(f"selection_rate must be in (0, 1], got {selection_rate}.")
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1:
            raise ValueError(
                "mask_token_rate and random_token_rate must be >= 0 with a sum <= 1, got "
                f"{mask_token_rate} and {random_token_rate}."
            )
        if max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq must be >= 1, got {max_predictions_per_seq}.")
        if not 0 <= mask_token_id < vocab_size:
            raise ValueError(f"mask_token_id={mask_token_id} is outside [0, vocab_size={vocab_size}).")
        if whole_word_masking and vocabulary is None:
            raise ValueError("whole_word_masking=True needs `vocabulary` to find the ## pieces.")
        if isinstance(vocabulary, str):
            vocabulary = load_vocabulary(vocabulary)
        self.vocab_size = int(vocab_size)
        self.mask_token_id = int(mask_token_id)
        self.special_token_ids = [int(i) for i in special_token_ids]
        self.selection_rate = float(selection_rate)
        self.mask_token_rate = float(mask_token_rate)
        self.random_token_rate = float(random_token_rate)
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.whole_word_masking = bool(whole_word_masking)
        self.vocabulary = None if vocabulary is None else list(vocabulary)
        self.seed = seed
        self.padding_id = int(padding_id)
        self._continuation_ids = [
            i for i, token in enumerate(self.vocabulary) if token.startswith(SUFFIX_INDICATOR)
        ] if self.whole_word_masking else None
        self.seed_generator = keras.random.SeedGenerator(seed)

    @classmethod
    def from_tokenizer(cls, tokenizer: BertTokenizer, **kwargs) -> MaskedLMMasker:
        """A masker for `tokenizer`'s vocabulary: its `[MASK]`, `[CLS]`, `[SEP]`, `[PAD]`."""
        kwargs.setdefault("vocabulary", tokenizer.vocabulary)
        return cls(
            vocab_size=tokenizer.vocab_size,
            mask_token_id=tokenizer.mask_id,
            special_token_ids=[tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id],
            padding_id=tokenizer.pad_id,
            **kwargs,
        )

    def call(self, input_word_ids):
        return self.mask(input_word_ids, self.seed_generator.next())

    def mask(self, input_word_ids, seed) -> dict[str, tf.Tensor]:
        """Masks `input_word_ids` with this layer's settings and an explicit `seed`, statelessly.

        The layer's own seed state is neither read nor advanced, so a `tf.data` pipeline that seeds
        each batch itself (e.g. from `tf.data.Dataset.random`) holds no variable and its iterator can
        be saved in a checkpoint.

        Args:
            input_word_ids: int32 [batch, seq_length], padded with `padding_id`.
            seed: int32/int64 tensor of shape [2]; the same seed gives the same mask.

        Returns:
            The dict `call` returns (see `mask_tokens`).

        Example:

            >>> masker = MaskedLMMasker(vocab_size=30522, mask_token_id=103, special_token_ids=[0, 101, 102])
            >>> ids = tf.constant([[101, 2023, 2003, 1037, 3231, 102, 0, 0]])
            >>> first, again = masker.mask(ids, [1, 2]), masker.mask(ids, [1, 2])
            >>> bool(tf.reduce_all(first["input_word_ids"] == again["input_word_ids"]))
            True
        """
        arguments = {name: getattr(self, name) for name in _MASK_ARGS}
        return mask_tokens(input_word_ids, seed, continuation_ids=self._continuation_ids, **arguments)
