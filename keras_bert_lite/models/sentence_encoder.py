"""`BertSentenceEncoder`: one vector per text for semantic search, clustering and deduplication,
as sentence-transformers computes it, with contrastive fine-tuning on raw text pairs."""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert_lite.interop.hub import fetch_optional_files
from keras_bert_lite.interop.sentence_transformers import (
    SENTENCE_TRANSFORMERS_FILES,
    read_sentence_transformers_config,
)
from keras_bert_lite.layers.pooling import SentencePooling
from keras_bert_lite.models.checkpoint_folder import find_checkpoint
from keras_bert_lite.models.checkpoint_folder import from_checkpoint as load_checkpoint
from keras_bert_lite.models.encoder import BertEncoder, encoder_inputs
from keras_bert_lite.models.losses import multiple_negatives_ranking_loss, replica_share
from keras_bert_lite.models.task_model import TextTaskModel
from keras_bert_lite.models.text_inputs import holds_text, text_column
from keras_bert_lite.text.preprocessor import BertPreprocessor

# `encode` pads each batch to its longest text rounded up to a multiple of this (capped at the
# preprocessor's seq_length): at most 8 extra tokens per text, and few distinct shapes for the
# kernels' caches.
LENGTH_BUCKET = 8
# What one more model call costs `encode`, in padded tokens: its fixed cost, and the lower speed of
# smaller matrix products. Measured on MiniLM, 2 cores, batches of 32 mixed texts: 32, 128, 512 and
# no split ran at 1.53x, 1.67x, 1.65x and 1.03x sentence-transformers' speed.
CALL_COST_TOKENS = 128


def plan_batches(widths: np.ndarray, batch_size: int, call_cost: float = CALL_COST_TOKENS) -> list[tuple[int, int]]:
    """Splits texts sorted longest first into model calls, each padded to its first (longest) text,
    minimizing the padded tokens plus `call_cost` per call.

    A call holds at most the padded tokens of `batch_size` of the longest texts (`batch_size *
    widths[0]`): `batch_size` texts at that width, more of shorter ones, so memory stays that of the
    longest batch while short texts do not pay a call for every `batch_size` of them. A batch of
    mixed lengths costs its longest text times its size, one of similar lengths about its own
    tokens: this is the cheapest split of the sorted order (dynamic programming over where each call
    starts), so short texts are not padded to long ones when one more call is cheaper.

    Args:
        widths: int [n], each text's padded width, non-increasing.
        batch_size: texts per call at the longest width.
        call_cost: a call's fixed cost in padded tokens.

    Returns:
        `(start, end)` row ranges of `widths`, in order, covering it.
    """
    count = len(widths)
    if not count:
        return []
    budget = batch_size * int(widths[0])  # padded tokens per call at most
    best = np.zeros(count + 1)  # best[k]: the least cost of the first k texts
    start_of = np.zeros(count + 1, int)
    for end in range(1, count + 1):
        # Rows times the first row's width fall as a call starts later: the calls that fit are a suffix.
        starts = np.arange(max(0, end - budget // int(widths[end - 1])), end)
        starts = starts[(end - starts) * widths[starts] <= budget]
        costs = best[starts] + call_cost + (end - starts) * widths[starts]
        last_best = len(costs) - 1 - int(costs[::-1].argmin())  # on ties, full calls first
        best[end], start_of[end] = costs[last_best], starts[last_best]
    bounds, end = [], count
    while end:
        bounds.append((int(start_of[end]), end))
        end = int(start_of[end])
    return bounds[::-1]


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertSentenceEncoder(TextTaskModel):
    """A `BertEncoder`, a `SentencePooling` of its last layer and optional L2 normalization: a
    sentence-transformers model (Transformer, Pooling[, Normalize]) in Keras.

    Args:
        encoder: the (pre-trained) `BertEncoder`; its weights are shared, not copied.
        pooling_modes: `SentencePooling` modes, e.g. "mean" (default), "cls", "max", or several.
        normalize: whether the embeddings are scaled to unit length (sentence-transformers'
            Normalize module), so that dot products are cosine similarities.
        preprocessor: optional `BertPreprocessor` for raw text; its `seq_length` is the token
            limit (sentence-transformers' `max_seq_length`, [CLS] and [SEP] included).

    Inputs: token ids, a dict of int32 [batch, seq] `input_word_ids`, `input_mask`,
    `input_type_ids` (any seq up to `max_position_embeddings`: padding is masked out).

    Outputs:
        Calling the model: float32 [batch, len(modes) * H], the embeddings.
        `encode(texts)` / `predict(texts)`: the same as a float32 numpy array [n, len(modes) * H].

    Training: `fit(x=(anchors, positives))` on raw strings trains with
    `multiple_negatives_ranking_loss` (in-batch negatives, scale 20): each anchor's positive is
    its pair's text, every other positive of the batch a negative, so larger batches give
    harder training. The default `compile()` is `TextTaskModel`'s (BERT's AdamW at 5e-5).

    Attributes: `encoder`, `pooling` (the `SentencePooling`), `normalization`, `pooling_modes`,
    `normalize`, `preprocessor`.

    Example:

        >>> model = BertSentenceEncoder.from_checkpoint("all-MiniLM-L6-v2")  # pooling from its folder
        >>> embeddings = model.encode(["A man is eating food.", "Someone is eating a meal."])
        >>> embeddings.shape, model.similarity(embeddings, embeddings).shape
        ((2, 384), (2, 2))
        >>> model.fit((["how old is the universe?"], ["13.8 billion years"]), epochs=1)
        >>> model.save("sentences.keras")
    """

    CONFIG_ARGS = ("pooling_modes", "normalize")

    UNREAD_ENCODER_LAYERS = ("pooler",)  # pooling reads `sequence_output` ("cls" too: the token, not the pooler)

    def __init__(self, encoder: BertEncoder, pooling_modes: str | Sequence[str] = "mean", normalize: bool = False,
                 preprocessor: BertPreprocessor | None = None, **kwargs):
        if not isinstance(normalize, bool):
            raise ValueError(f"BertSentenceEncoder: normalize must be True or False, got {normalize!r}.")
        pooling = SentencePooling(pooling_modes, name="pooling")
        normalization = keras.layers.UnitNormalization(axis=-1, dtype="float32", name="normalization")
        inputs = encoder_inputs()
        outputs = sentence_embeddings(encoder, pooling, normalization if normalize else None, inputs)
        super().__init__(inputs=inputs, outputs=outputs, **{"name": "bert_sentence_encoder", **kwargs})
        self.attach(encoder, preprocessor)
        self.pooling = pooling
        self.normalization = normalization
        self.pooling_modes = pooling.modes
        self.normalize = normalize
        self._encode_functions = {}

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, seq_length: int | None = None, *, lower_case: bool | None = None,
                        vocab_file: str | os.PathLike | None = None, pooling_modes: str | Sequence[str] | None = None,
                        normalize: bool | None = None, **kwargs) -> BertSentenceEncoder:
        """The sentence encoder of the pre-trained BERT at `path` (any folder or name
        `keras_bert_lite.from_checkpoint` takes).

        A sentence-transformers folder (with `modules.json`) gives the pooling modes, whether to
        normalize, and the token limit (`sentence_bert_config.json`'s `max_seq_length`). Any other
        folder gives mean pooling without normalization (sentence-transformers' default for a plain
        BERT) and the model's `max_position_embeddings` as the limit; the choice is logged. (A
        `.keras` file of a `BertSentenceEncoder` is read here for its encoder only: load the whole
        model with `keras.saving.load_model`.)

        Args:
            path, lower_case, vocab_file: as for `keras_bert_lite.from_checkpoint`.
            seq_length: the token limit ([CLS] and [SEP] included); None: the folder's, as above.
            pooling_modes, normalize: override the folder's.
            **kwargs: `keras.Model` arguments (`name`).

        Raises:
            ValueError: naming the file and field, for sentence-transformers modules or pooling
                options this class does not implement (see
                `keras_bert_lite.interop.sentence_transformers`); as `from_checkpoint` otherwise.
        """
        fetch_optional_files(path, SENTENCE_TRANSFORMERS_FILES)  # for a Hub name; its BERT files come next
        folder = find_checkpoint(path, vocab_file)
        sentence_config = read_sentence_transformers_config(folder.directory)
        if sentence_config is None:
            modes, normalizes, limit = ("mean",), False, None
            source = f"{folder.directory} has no modules.json: mean pooling, not normalized (the default)"
        else:
            modes, normalizes, limit = (sentence_config.pooling_modes, sentence_config.normalize,
                                        sentence_config.max_seq_length)
            source = f"read from {sentence_config.source}"
        encoder, preprocessor = load_checkpoint(path, seq_length or limit or 128, lower_case, vocab_file)
        if seq_length is None and limit is None:
            preprocessor.seq_length = encoder.config.max_position_embeddings
        model = cls(encoder, pooling_modes if pooling_modes is not None else modes,
                    normalizes if normalize is None else normalize, preprocessor=preprocessor, **kwargs)
        logging.info("BertSentenceEncoder: pooling %s, normalize=%s, at most %d tokens (%s).", list(model.pooling_modes),
                     model.normalize, preprocessor.seq_length, source)
        return model

    @property
    def embedding_size(self) -> int:
        """The width of the embeddings: len(pooling_modes) x the encoder's hidden size."""
        return len(self.pooling_modes) * self.encoder.config.hidden_size

    def encode(self, texts, batch_size: int = 32, normalize: bool | None = None) -> np.ndarray:
        """The embeddings of `texts`, as sentence-transformers' `encode` returns them.

        The texts are tokenized at once, sorted by length and run in calls each padded only to its
        longest text (rounded up to a multiple of `LENGTH_BUCKET`), of at most the padded tokens of
        `batch_size` of the longest texts; a batch of mixed lengths is split where that saves padded
        tokens (`plan_batches`), so short texts cost about their own length. Rows come back in the input order; each text's
        embedding does not depend on the others (equal to float32 rounding). A text longer than the
        preprocessor's `seq_length` is truncated to its first `seq_length - 2` word pieces, as
        sentence-transformers truncates at `max_seq_length`; an empty text is "[CLS] [SEP]" and
        gets a (non-zero) embedding, as there.

        Args:
            texts: one `str` or a sequence of them (a list, numpy or pandas column); may be empty.
            batch_size: texts per model call at the longest text's length; shorter texts share
                calls up to the same padded tokens (bounds memory, as in sentence-transformers).
            normalize: None (default): as the model is built (`self.normalize`); True: unit length;
                False: the pooled vectors before any normalization.

        Returns:
            float32 numpy [n, embedding_size].

        Raises:
            ValueError: no preprocessor, a non-text entry (naming its index), or a bad batch_size.
        """
        preprocessor = self.require_preprocessor()
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"{self.name}.encode: batch_size must be a positive integer, got {batch_size!r}.")
        if normalize is not None and not isinstance(normalize, bool):
            raise ValueError(f"{self.name}.encode: normalize must be None, True or False, got {normalize!r}.")
        if not isinstance(texts, (str, bytes)) and len(texts) == 0:
            return np.zeros((0, self.embedding_size), "float32")
        pieces = preprocessor.tokenizer(text_column(texts, "texts"))
        seq_length, tokenizer = preprocessor.seq_length, preprocessor.tokenizer
        lengths = np.minimum(pieces.row_lengths().numpy(), seq_length - 2)  # truncated as BertPackInputs does
        starts, values = pieces.row_splits.numpy()[:-1], pieces.flat_values.numpy()
        embed = self._encode_function(self.normalize if normalize is None else normalize)
        embeddings = np.empty((len(lengths), self.embedding_size), "float32")
        order = np.argsort(-lengths, kind="stable")  # longest first, as sentence-transformers
        widths = np.minimum(-(-(lengths[order] + 2) // LENGTH_BUCKET) * LENGTH_BUCKET, seq_length)
        for first, end in plan_batches(widths, batch_size):
            rows, width = order[first:end], int(widths[first])
            ids = np.full((len(rows), width), tokenizer.pad_id, "int32")
            mask = np.zeros((len(rows), width), "int32")
            for i, row in enumerate(rows):  # [CLS] pieces [SEP] padding, as BertPackInputs packs one text
                count = lengths[row]
                ids[i, 0], ids[i, count + 1] = tokenizer.cls_id, tokenizer.sep_id
                ids[i, 1:count + 1] = values[starts[row]:starts[row] + count]
                mask[i, :count + 2] = 1
            embeddings[rows] = embed(ids, mask, np.zeros_like(mask)).numpy()
        return embeddings

    def _encode_function(self, normalize: bool):
        """One `tf.function` per `normalize`, traced once for any batch and length."""
        if normalize not in self._encode_functions:
            spec = tf.TensorSpec([None, None], tf.int32)

            def embed(input_word_ids, input_mask, input_type_ids):
                inputs = {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}
                return sentence_embeddings(self.encoder, self.pooling, self.normalization if normalize else None,
                                           inputs, training=False)

            self._encode_functions[normalize] = tf.function(embed, input_signature=[spec] * 3, autograph=False)
        return self._encode_functions[normalize]

    def similarity(self, a, b) -> np.ndarray:
        """Cosine similarities of every `a` with every `b`.

        Args:
            a, b: texts (encoded with `encode`) or embeddings, float [n, D] and [m, D].

        Returns:
            float32 numpy [n, m], in [-1, 1].
        """
        a, b = (self.encode(x) if holds_text(x) else np.asarray(x, "float32") for x in (a, b))
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
            raise ValueError(f"{self.name}.similarity: expected embeddings [n, D] and [m, D], got {a.shape} and {b.shape}.")
        a, b = (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12) for x in (a, b))
        return (a @ b.T).astype("float32")

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict`; on raw text, `encode(x, batch_size)` (the same values, faster)."""
        if holds_text(x):
            return self.encode(x, batch_size or 32)
        return super().predict(x, batch_size, **kwargs)

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """A batch of (anchor, positive) text pairs as one batch of inputs [2B, L]: the B anchors,
        then their B positives, cut to the longest text (L <= seq_length), for `compute_loss`.

        Raises:
            ValueError: single texts, or labels or weights (the pairs are the labels).
        """
        if not (isinstance(x, (tuple, list)) and len(x) == 2) or y is not None or sample_weight is not None:
            raise ValueError(f"{self.name} trains on (anchors, positives) text pairs without labels: "
                             "fit(x=(anchors, positives)) with two columns of texts of the same length.")
        preprocessor = self.require_preprocessor()
        anchors, positives = preprocessor(x[0]), preprocessor(x[1])
        inputs = {name: tf.concat([anchors[name], positives[name]], axis=0) for name in anchors}
        length = tf.maximum(tf.reduce_max(tf.reduce_sum(inputs["input_mask"], axis=1)), 2)
        return {name: value[:, :length] for name, value in inputs.items()}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """`multiple_negatives_ranking_loss` of the anchors' embeddings (the first half of
        `y_pred`, see `preprocess_samples`) against the positives' (the second half)."""
        anchors, positives = tf.split(y_pred, 2, axis=0)
        return replica_share(multiple_negatives_ranking_loss(anchors, positives) + sum(self.losses))


def sentence_embeddings(encoder: BertEncoder, pooling: SentencePooling, normalization, inputs: dict, training=None):
    """The encoder's last layer pooled over each text's tokens (and L2-normalized by
    `normalization` unless None): float32 [batch, D]; the model's graph and `encode` both."""
    sequence_output = encoder(inputs, training=training)["sequence_output"]
    embeddings = pooling(sequence_output, inputs["input_mask"])
    return embeddings if normalization is None else normalization(embeddings)
