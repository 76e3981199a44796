"""SQuAD examples as model inputs: the doc-stride windows of `squad_windows`, with training labels,
as numpy arrays and as a `tf.data.Dataset`."""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf
from tqdm import tqdm

from keras_bert_lite.data.squad.reading import SquadExample
from keras_bert_lite.data.squad.windows import squad_windows
from keras_bert_lite.text.packer import OUTPUT_NAMES as MODEL_INPUTS
from keras_bert_lite.text.packer import BertPackInputs


@dataclasses.dataclass
class SquadFeatures:
    """Model inputs for windows over the contexts, and what maps them back to text.

    Attributes (N windows, S = max_seq_length), the `squad_windows` outputs of the same names:
        input_word_ids, input_mask, input_type_ids: int32 [N, S], `[CLS] question [SEP] window [SEP]`.
        start_positions, end_positions: int32 [N], the answer's first/last token; 0 ([CLS]) if none.
        example_index: int32 [N], the window's example (non-decreasing).
        token_starts, token_ends: int32 [N, S], byte offsets in the context (-1 outside it).
        max_context: bool [N, S], whether this window is where the token's prediction counts.
    """

    input_word_ids: np.ndarray
    input_mask: np.ndarray
    input_type_ids: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    token_starts: np.ndarray
    token_ends: np.ndarray
    max_context: np.ndarray

    def __len__(self) -> int:
        return len(self.example_index)

    def model_inputs(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in MODEL_INPUTS}


def check_window_arguments(seq_length: int, doc_stride: int, max_query_length: int) -> None:
    """Raises ValueError unless windows of `seq_length` tokens can hold a question and some context."""
    if max_query_length < 1:
        raise ValueError(f"max_query_length must be positive, got {max_query_length}.")
    if seq_length < max_query_length + 4:
        raise ValueError(
            f"max_seq_length ({seq_length}) must exceed max_query_length ({max_query_length}) + 3: a window "
            "holds [CLS], the question, [SEP], at least one context token and [SEP]."
        )
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be positive, got {doc_stride}.")


def squad_features(
    examples: list[SquadExample],
    tokenizer,
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
    progress: bool = False,
    batch_size: int = 1024,
) -> SquadFeatures:
    """Windows `[CLS] question [SEP] context window [SEP]` over every example (see `squad_windows`).

    Args:
        examples: from `read_squad`.
        tokenizer: the model's `BertTokenizer` (ids for [CLS], [SEP], [PAD] come from it).
        max_seq_length: tokens per window (384 in the paper).
        doc_stride: tokens between the starts of consecutive windows (128).
        max_query_length: questions are cut to this many tokens (64).
        progress: show a progress bar.
        batch_size: examples turned into windows per graph call (bounds memory, not results).

    Every window is kept (as in the paper); one that does not contain the whole answer, or
    belongs to an unanswerable question, is labelled with position 0 ([CLS]). Answers are
    labelled where they occur at their `answer_start` (always so for `read_squad(...,
    is_training=True)`).

    Returns:
        `SquadFeatures`.

    Raises:
        ValueError: bad window arguments, or an answer made only of characters the tokenizer drops
            (it names the question).
    """
    check_window_arguments(max_seq_length, doc_stride, max_query_length)
    packer = BertPackInputs(max_seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)
    parts = []
    with tqdm(total=len(examples), desc="Featurizing", unit="question", disable=not progress) as bar:
        for first in range(0, len(examples), batch_size):
            batch = examples[first : first + batch_size]
            spans = np.array([_answer_bytes(e) for e in batch], "int64").reshape(-1, 2)
            contexts = {}  # each distinct context of the batch, tokenized once
            context_index = np.array([contexts.setdefault(e.context, len(contexts)) for e in batch], "int32")
            result = squad_windows(tokenizer, packer, tf.constant([e.question for e in batch]),
                                   tf.constant(list(contexts)), max_query_length, doc_stride, spans, context_index)
            for index in np.flatnonzero((spans[:, 0] >= 0) & (result["answer_tokens"].numpy()[:, 0] < 0)):
                example = batch[index]
                raise ValueError(
                    f"question {example.qas_id!r}: its answer {example.answers[0]!r} at character "
                    f"{example.answer_start} holds no token (only characters the tokenizer drops)."
                )
            part = {name: result[name].numpy() for name in (*MODEL_INPUTS, "start_positions", "end_positions",
                                                            "max_context")}
            part["example_index"] = result["example_index"].numpy() + first
            part["token_starts"] = result["token_starts"].numpy().astype("int32")
            part["token_ends"] = result["token_ends"].numpy().astype("int32")
            parts.append(part)
            bar.update(len(batch))
    if not parts:
        raise ValueError("squad_features needs at least one example.")
    return SquadFeatures(**{name: np.concatenate([p[name] for p in parts]) for name in parts[0]})


def _answer_bytes(example: SquadExample) -> tuple[int, int]:
    """UTF-8 byte span of the first answer in the context, or (-1, -1) if it is not at its offset."""
    if example.is_impossible or not example.answers or example.answer_start < 0:
        return -1, -1
    text = example.answers[0]
    if example.context[example.answer_start : example.answer_start + len(text)] != text:
        return -1, -1
    start = len(example.context[: example.answer_start].encode("utf-8"))
    return start, start + len(text.encode("utf-8"))


def squad_dataset(
    features: SquadFeatures, batch_size: int, is_training: bool, seed: int | None = None
) -> tf.data.Dataset:
    """`(inputs, labels)` batches: the three model inputs and `start_positions`/`end_positions`.

    Shuffled (with `seed`) when `is_training`; in file order otherwise, so predictions line up
    with `features`.
    """
    labels = {"start_positions": features.start_positions, "end_positions": features.end_positions}
    ds = tf.data.Dataset.from_tensor_slices((features.model_inputs(), labels))
    if is_training:
        ds = ds.shuffle(len(features), seed=seed, reshuffle_each_iteration=True)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)
