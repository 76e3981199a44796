"""`BertMaskedLM`: BERT's masked-LM head on raw text: fill-mask, and continued pre-training with
`fit` on plain text (masking in the input pipeline), as KerasHub's `BertMaskedLM` does."""

from __future__ import annotations

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert_lite.config import BertConfig
from keras_bert_lite.interop import load_google_checkpoint, load_hf_checkpoint, read_hf_config
from keras_bert_lite.interop.google import CONFIG_NAME as GOOGLE_CONFIG_NAME
from keras_bert_lite.interop.mapping import weight_specs
from keras_bert_lite.interop.release import make_preprocessor
from keras_bert_lite.layers import MaskedLMHead
from keras_bert_lite.models import text_inputs
from keras_bert_lite.models.checkpoint_folder import (
    KERAS_ENCODER_NAME,
    find_checkpoint,
    loading_lower_case,
)
from keras_bert_lite.models.encoder import INPUT_NAMES, BertEncoder, encoder_inputs
from keras_bert_lite.models.task_model import TextTaskModel
from keras_bert_lite.models.text_inputs import holds_text, text_column
from keras_bert_lite.text.masking import MaskedLMMasker
from keras_bert_lite.text.preprocessor import BertPreprocessor

MASK_TOKEN = "[MASK]"
# Our pre-training folders hold the encoder with its heads beside `encoder.keras`.
KERAS_PRETRAINER_NAME = "pretrainer.keras"
# Checkpoint name prefixes of the MLM head, and of what the MLM model does not read.
_HEAD_PREFIXES = {"google": "cls/predictions/", "hugging_face": "cls.predictions."}
_POOLER_PREFIXES = {"google": "bert/pooler/", "hugging_face": "pooler."}
_NSP_PREFIXES = ("cls/seq_relationship/", "cls.seq_relationship.")
# BERT's pre-training rate (the paper's Adam at 1e-4): continued pre-training goes on with the
# pre-training objective, at its rate rather than fine-tuning's 5e-5.
PRETRAINING_LEARNING_RATE = 1e-4
# The masks `evaluate` and `predict` draw on raw text: the same every call, so that scores of
# one held-out text before and after training compare the same predictions.
EVALUATION_MASK_SEED = 42


def mask_token_inputs(preprocessor: BertPreprocessor, texts: tf.Tensor) -> dict[str, tf.Tensor]:
    """Texts with `[MASK]` written in them as encoder inputs, in the TensorFlow graph.

    `[MASK]` (exactly so, whatever the vocabulary's casing) is the mask token; the text around
    it is tokenized as any other. Used by `BertMaskedLM.fill_mask` and the exported model.

    Args:
        preprocessor: the model's `BertPreprocessor` (its tokenizer and packer).
        texts: tf.string [batch].

    Returns:
        The encoder's three int32 [batch, seq_length] inputs, plus `masked_lm_positions` int32
        [batch, M] (the positions of the `[MASK]` tokens left after truncation, ascending, padded
        with 0; M is the batch's largest count) and `num_masks` int32 [batch] (how many).
    """
    tokenizer = preprocessor.tokenizer
    pieces = tf.strings.split(texts, sep=MASK_TOKEN)  # [batch, (masks + 1)]
    piece_ids = tokenizer(pieces.flat_values)  # [pieces, (tokens)]
    mask_after = tf.fill([tf.shape(piece_ids.row_lengths())[0], 1], tf.cast(tokenizer.mask_id, piece_ids.dtype))
    with_masks = tf.concat([piece_ids, mask_after], axis=1)  # a [MASK] after every piece...
    ids = tf.RaggedTensor.from_row_lengths(with_masks, pieces.row_lengths()).merge_dims(1, 2)
    features = preprocessor.packer(ids[:, :-1])  # ...but the last
    is_mask = tf.equal(features["input_word_ids"], tokenizer.mask_id)
    positions = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(tf.shape(is_mask)[1]), tf.shape(is_mask)), is_mask)
    return {
        **features,
        "masked_lm_positions": tf.cast(positions.to_tensor(), tf.int32),
        "num_masks": tf.cast(positions.row_lengths(), tf.int32),
    }


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertMaskedLM(TextTaskModel):
    """A `BertEncoder` with BERT's masked-LM head (tied to the word embeddings), on raw text.

    The encoder's pooler, which the head does not read, is not among the model's trainable weights
    (`UNREAD_ENCODER_LAYERS`): `fit` leaves it as it is, without a warning.

    Args:
        encoder: the (usually pre-trained) `BertEncoder`; its weights are shared, not copied.
        preprocessor: optional `BertPreprocessor` for raw text (see `TextTaskModel`).
        max_predictions_per_seq: at most this many tokens masked per text by `fit`,
            `evaluate` and `predict` on raw text (20 for 128 tokens in the paper); `fill_mask`
            predicts every `[MASK]` written in a text, however many.
        selection_rate, mask_token_rate, random_token_rate: BERT's 15 % of tokens, of which
            80 % become `[MASK]`, 10 % a random token and 10 % stay (see `MaskedLMMasker`).
        whole_word_masking: mask all the word pieces of a word together.
        **kwargs: `keras.Model` arguments (`name`).

    Inputs: the encoder's three int32 [batch, seq] inputs plus `masked_lm_positions` int32
    [batch, P], the positions to predict (what `keras_bert_lite.text.MaskedLMMasker` returns).
    With a preprocessor, `fit`/`evaluate`/`predict` take texts (or text pairs), masked in the
    input pipeline: new masks on every epoch of `fit`, the same masks (a fixed seed) on every
    call of `evaluate` and `predict`, so before/after scores compare like with like.

    Outputs:
        Calling the model and `predict`: float32 logits [batch, P, vocab_size] at the masked
        positions (P = `max_predictions_per_seq` on raw text; padding rows where a text has
        fewer tokens to mask). `fill_mask`: transformers' fill-mask pipeline format.

    Training: labels are the masked tokens' ids int32 [batch, P] with sample weights float32
    [batch, P] (1 for a real prediction, 0 for padding), made from raw text by the pipeline.
    The default `compile()` uses `SparseCategoricalCrossentropy(from_logits=True,
    reduction="mean_with_sample_weight")`, BERT's masked-LM loss (the weighted mean over the
    real predictions), and a weighted `accuracy` over them, with BERT's AdamW at a constant
    1e-4 (`compile`).

    Attributes: `encoder`, `masked_lm` (the `MaskedLMHead`), `preprocessor` and the masking
    arguments above.

    Example:

        >>> mlm = BertMaskedLM.from_checkpoint("uncased_L-12_H-768_A-12", seq_length=128)
        >>> mlm.fill_mask("the capital of france is [MASK].", top_k=1)
        [{'score': 0.4..., 'token': 3000, 'token_str': 'paris', 'sequence': 'the capital of france is paris.'}]
        >>> mlm.evaluate(held_out_lines)                    # loss and masked accuracy
        >>> mlm.fit(domain_lines, epochs=2)                 # continued pre-training on plain text
    """

    CONFIG_ARGS = ("max_predictions_per_seq", "selection_rate", "mask_token_rate", "random_token_rate",
                   "whole_word_masking")

    UNREAD_ENCODER_LAYERS = ("pooler",)  # the head reads `sequence_output`

    def __init__(self, encoder: BertEncoder, preprocessor: BertPreprocessor | None = None,
                 max_predictions_per_seq: int = 20, selection_rate: float = 0.15, mask_token_rate: float = 0.8,
                 random_token_rate: float = 0.1, whole_word_masking: bool = False, **kwargs):
        if isinstance(max_predictions_per_seq, bool) or not isinstance(max_predictions_per_seq, int) \
                or max_predictions_per_seq < 1:
            raise ValueError(f"BertMaskedLM: max_predictions_per_seq must be a positive integer, "
                             f"got {max_predictions_per_seq!r}.")
        inputs = encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        config = encoder.config
        masked_lm = MaskedLMHead(
            encoder.embeddings,
            activation=config.hidden_act,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            dtype=self.head_dtype(encoder, kwargs.pop("dtype", None)),
            name="masked_lm",
        )
        hidden = encoder({name: inputs[name] for name in INPUT_NAMES}, output_positions=inputs["masked_lm_positions"])
        outputs = masked_lm(hidden["sequence_output"])
        super().__init__(inputs=inputs, outputs=outputs, **{"name": "bert_masked_lm", **kwargs})
        self.attach(encoder, preprocessor)
        self.masked_lm = masked_lm
        self.max_predictions_per_seq = max_predictions_per_seq
        self.selection_rate = selection_rate
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.whole_word_masking = whole_word_masking
        if preprocessor is not None:
            self.masker()  # the masking arguments are checked now, not at the first fit

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, seq_length: int = 128, *, lower_case: bool | None = None,
                        vocab_file: str | os.PathLike | None = None, **kwargs) -> BertMaskedLM:
        """The encoder and its masked-LM head at `path`, with a preprocessor for its vocabulary.

        Reads the head where there is one: our pre-training folder (`pretrainer.keras` beside
        `encoder.keras`) or a `.keras` file of a `BertPretrainer` or `BertMaskedLM`; a Google
        folder's `cls/predictions/*`; a Hugging Face `BertForMaskedLM` or `BertForPreTraining`
        folder's `cls.predictions.*` (a `BertForMaskedLM` file has no pooler, which this model
        does not read: it is left as initialised). A checkpoint without the head (a `BertModel`,
        a sentence-transformers folder, `encoder.keras` alone) gets a new head, tied to the word
        embeddings, initialised as BERT initialises it; one log line says so.

        Args:
            path, seq_length, lower_case, vocab_file: as for
                `keras_bert_lite.models.checkpoint_folder.from_checkpoint`.
            **kwargs: the model's own arguments (`max_predictions_per_seq`, ...).

        Raises:
            FileNotFoundError, ValueError: as `from_checkpoint`; also a checkpoint with part of
                the head only (`CheckpointMismatchError`).
        """
        folder = find_checkpoint(path, vocab_file)
        lower_case = loading_lower_case(folder, lower_case)
        if folder.kind == "keras":
            return cls._from_keras_file(folder, seq_length, lower_case, **kwargs)
        if folder.kind == "google":
            config = BertConfig.from_json_file(os.path.join(folder.directory, GOOGLE_CONFIG_NAME))
            load = load_google_checkpoint
        else:
            config, load = read_hf_config(folder.directory), load_hf_checkpoint
        preprocessor = make_preprocessor(folder.vocab_file, config, seq_length, lower_case)
        model = cls(BertEncoder(config), preprocessor=preprocessor, **kwargs)
        report = load(model, folder.directory, strict=False)
        head, pooler = _HEAD_PREFIXES[folder.kind], _POOLER_PREFIXES[folder.kind]
        missing_head = [name for name in report.missing if name.startswith(head)]
        head_names = [spec.name for spec in weight_specs(model, "google" if folder.kind == "google" else "hf")
                      if spec.name.startswith(head)]
        if missing_head and len(missing_head) < len(head_names):
            raise ValueError(f"{folder.weights} holds part of the masked-LM head only: {missing_head} are missing.")
        report = dataclasses.replace(report, missing=tuple(
            name for name in report.missing if not name.startswith((head, pooler))))
        report.raise_for_problems(allowed_unexpected=_NSP_PREFIXES)
        if missing_head:
            _log_new_head(folder.weights)
        return model

    @classmethod
    def _from_keras_file(cls, folder, seq_length: int, lower_case: bool, **kwargs) -> BertMaskedLM:
        path = folder.weights
        beside = os.path.join(folder.directory, KERAS_PRETRAINER_NAME)
        if os.path.basename(path) == KERAS_ENCODER_NAME and tf.io.gfile.exists(beside):
            path = beside
        saved = keras.saving.load_model(path, compile=False)
        encoder = saved if isinstance(saved, BertEncoder) else getattr(saved, "encoder", None)
        if not isinstance(encoder, BertEncoder):
            raise ValueError(f"{path} holds a {type(saved).__name__}, which has no BertEncoder.")
        preprocessor = make_preprocessor(folder.vocab_file, encoder.config, seq_length, lower_case)
        if getattr(saved, "masked_lm", None) is not None:
            return cls.from_pretrainer(saved, preprocessor, **kwargs)
        _log_new_head(path)
        return cls(encoder, preprocessor=preprocessor, **kwargs)

    @classmethod
    def from_pretrainer(cls, pretrainer: keras.Model, preprocessor: BertPreprocessor | None = None,
                        **kwargs) -> BertMaskedLM:
        """The masked LM of a `BertPretrainer` (or `BertMaskedLM`): its encoder (shared, not
        copied) and a copy of its masked-LM head's weights, e.g. to `fill_mask` with a model in
        pre-training.

        Args:
            pretrainer: a model with `encoder` and `masked_lm` (a `MaskedLMHead`).
            preprocessor, **kwargs: as for the constructor.
        """
        model = cls(pretrainer.encoder, preprocessor=preprocessor, **kwargs)
        head = pretrainer.masked_lm
        model.masked_lm.transform.set_weights(head.transform.get_weights())
        model.masked_lm.layer_norm.set_weights(head.layer_norm.get_weights())
        model.masked_lm.output_bias.assign(head.output_bias)
        return model

    def masker(self) -> MaskedLMMasker:
        """The `MaskedLMMasker` of this model's masking arguments, for its preprocessor's vocabulary."""
        return MaskedLMMasker.from_tokenizer(
            self.require_preprocessor().tokenizer,
            selection_rate=self.selection_rate,
            mask_token_rate=self.mask_token_rate,
            random_token_rate=self.random_token_rate,
            max_predictions_per_seq=self.max_predictions_per_seq,
            whole_word_masking=self.whole_word_masking,
        )

    def preprocess_samples(self, x, y=None, sample_weight=None, *, masker: MaskedLMMasker | None = None,
                           seed=None):
        """One batch of raw text, masked: `(features, masked_lm_ids, masked_lm_weights)`.

        Args:
            x: tf.string [batch] texts, or a pair of them.
            y, sample_weight: must be None: the labels are the masked tokens themselves.
            masker: the `MaskedLMMasker` to use (default: `self.masker()`).
            seed: int [2] seed of the mask (see `MaskedLMMasker.mask`); None: a fixed one.

        Returns:
            features: the encoder's int32 [batch, seq_length] inputs (`input_word_ids` masked)
            plus `masked_lm_positions` int32 [batch, max_predictions_per_seq]; the labels
            `masked_lm_ids` int32 and weights `masked_lm_weights` float32, both [batch,
            max_predictions_per_seq].
        """
        if y is not None or sample_weight is not None:
            raise ValueError(f"{self.name}: y and sample_weight must be None for raw text: the labels are the "
                             "masked tokens themselves.")
        features = self.require_preprocessor()(x)
        masker = masker or self.masker()
        masked = masker.mask(features["input_word_ids"], [EVALUATION_MASK_SEED, 0] if seed is None else seed)
        features = {**features, "input_word_ids": masked["input_word_ids"],
                    "masked_lm_positions": masked["masked_lm_positions"]}
        return features, masked["masked_lm_ids"], masked["masked_lm_weights"]

    def text_batches(self, x, y=None, sample_weight=None, batch_size: int = 32, shuffle: bool = False,
                     new_masks: bool = False) -> tf.data.Dataset:
        """Texts as batches of masked inputs, labels and weights (see `preprocess_samples`).

        Args:
            x: texts or text pairs in any form `keras_bert_lite.models.text_dataset` takes.
            y, sample_weight: must be None.
            batch_size, shuffle: as for `text_dataset`.
            new_masks: draw new masks on every pass (`fit`); else the same masks every pass.
        """
        if y is not None or sample_weight is not None:
            raise ValueError(f"{self.name}: y and sample_weight must be None for raw text: the labels are the "
                             "masked tokens themselves.")
        self.require_preprocessor()
        masker = self.masker()
        texts = text_inputs.text_dataset(x, batch_size=batch_size, shuffle=shuffle)
        if new_masks:
            seeds = tf.data.Dataset.random(rerandomize_each_iteration=True).map(lambda r: tf.stack([r, 0]))
        else:  # batch i's seed is (EVALUATION_MASK_SEED, i), whatever the global seed (set_random_seed)
            seeds = tf.data.Dataset.counter().map(lambda i: tf.stack([tf.constant(EVALUATION_MASK_SEED, tf.int64), i]))
        batches = tf.data.Dataset.zip(texts, seeds).map(
            lambda text, seed: self.preprocess_samples(text[0], masker=masker, seed=seed),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        return batches.prefetch(tf.data.AUTOTUNE)

    def fit(self, x=None, y=None, batch_size=None, **kwargs):
        """`TextTaskModel.fit`; raw text is masked anew on every epoch (see the class docstring)."""
        if holds_text(x):
            x = self.text_batches(x, y, kwargs.pop("sample_weight", None), batch_size or 32,
                                  kwargs.pop("shuffle", True), new_masks=True)
            y = batch_size = None
        return super().fit(x, y, batch_size, **kwargs)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", learning_rate: float | None = None, **kwargs):
        """`TextTaskModel.compile`, whose "auto" optimizer here runs at BERT's pre-training rate,
        `PRETRAINING_LEARNING_RATE` (1e-4, constant), unless `learning_rate` is given."""
        if isinstance(optimizer, str) and optimizer == "auto" and learning_rate is None:
            learning_rate = PRETRAINING_LEARNING_RATE
        super().compile(optimizer, loss, metrics, learning_rate=learning_rate, **kwargs)

    def default_compile_arguments(self) -> dict:
        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight"),
            "weighted_metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }

    def fill_mask(self, texts, top_k: int = 5, batch_size: int = 32) -> list:
        """The `top_k` most probable tokens at each `[MASK]` written in each text, as
        `transformers.pipeline("fill-mask")` returns them.

        `[MASK]` is written so whatever the vocabulary's casing. A text may hold several; each
        is predicted on its own, with the others still masked (as in transformers).

        Args:
            texts: a string, or a list (or 1-D array) of strings.
            top_k: candidates per mask, at most the vocabulary size.
            batch_size: texts per model call.

        Returns:
            Per text: for one `[MASK]`, a list of `top_k` dicts, most probable first:
            `score` (float, softmax probability), `token` (int id), `token_str` (the vocabulary
            token) and `sequence` (the text with the mask filled, decoded as transformers does:
            word pieces joined, no space before punctuation, special tokens dropped); for several, one such list per mask
            in order of appearance (the other masks left as `[MASK]` in `sequence`, with
            `[CLS]`/`[SEP]`, as transformers does). A string gives that result; a list of
            strings gives a list of them (transformers returns a one-text list's result
            unwrapped; this does not). An empty list gives [].

        Raises:
            ValueError: a text without `[MASK]` (an empty string included), or whose masks
                all fall beyond the preprocessor's `seq_length` (naming the text's index);
                `top_k` not in [1, vocab_size].
        """
        preprocessor = self.require_preprocessor()
        tokens = preprocessor.tokenizer.vocabulary
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= len(tokens):
            raise ValueError(f"top_k must be an integer in [1, {len(tokens)}], got {top_k!r}.")
        single = isinstance(texts, (str, bytes))
        if not single and len(texts) == 0:
            return []
        column = text_column(texts, "texts")
        special = {preprocessor.tokenizer.pad_id, preprocessor.tokenizer.cls_id, preprocessor.tokenizer.sep_id,
                   preprocessor.tokenizer.mask_id, preprocessor.tokenizer.unk_id}
        results = []
        for start in range(0, int(column.shape[0]), batch_size):
            features = mask_token_inputs(preprocessor, column[start : start + batch_size])
            num_masks = features.pop("num_masks").numpy()
            for i in np.flatnonzero(num_masks == 0):
                raise ValueError(
                    f"texts[{start + i}] has no {MASK_TOKEN} within the first {preprocessor.seq_length} tokens "
                    f"(seq_length); fill_mask predicts the tokens written as {MASK_TOKEN}."
                )
            logits = self.predict_on_batch(features)
            probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))
            ids = features["input_word_ids"].numpy()
            positions = features["masked_lm_positions"].numpy()
            for row, count in enumerate(num_masks):
                per_mask = []
                for m in range(count):
                    # Softmax over the model's whole vocabulary (as transformers); candidates
                    # among the preprocessor's tokens (an encoder's table may have more rows).
                    best = np.argsort(-probabilities[row, m, : len(tokens)], kind="stable")[:top_k]
                    candidates = []
                    for token in best:
                        filled = ids[row].copy()
                        filled[positions[row, m]] = token
                        kept = [t for t in filled if t != preprocessor.tokenizer.pad_id
                                and (count > 1 or t not in special)]
                        candidates.append({"score": float(probabilities[row, m, token]), "token": int(token),
                                           "token_str": tokens[token], "sequence": _joined(tokens, kept)})
                    per_mask.append(candidates)
                results.append(per_mask[0] if count == 1 else per_mask)
        return results[0] if single else results


# The `tokenizers` WordPiece decoder's clean-up (transformers' BERT tokenizers decode with it),
# applied to each piece with its leading space.
_CLEAN_UPS = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
              (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def _joined(tokens: list[str], ids) -> str:
    """Word pieces as text, as transformers decodes them: separated by spaces, `##`
    continuations glued to the piece before (a first piece keeps its `##`), no space before
    `.`, `?`, `!` and `,`."""
    pieces = []
    for i, token_id in enumerate(ids):
        piece = tokens[token_id]
        if i > 0:
            piece = piece[2:] if piece.startswith("##") else " " + piece
        for spaced, joined in _CLEAN_UPS:
            piece = piece.replace(spaced, joined)
        pieces.append(piece)
    return "".join(pieces)


def _log_new_head(source: str) -> None:
    logging.info("%s has no masked-LM head weights: BertMaskedLM gets a new head, tied to the word embeddings "
                 "and initialised as BERT's; fit it (or fill_mask's scores mean nothing).", source)
