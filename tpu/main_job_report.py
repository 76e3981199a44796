"""What the main job learned: held-out accuracy against baselines, and predictions for masked words.

Part of the main job, `main_job.py`, which imports it as a sibling module.

The baselines are the accuracies of predictions made without the model, from the training
data alone: the most frequent masked training token (top-1) and the five most frequent (top-5)
for masked-LM, the majority training label for next-sentence prediction. They are counted over
exactly the held-out examples the model is evaluated on.

Example:

    >>> metrics = evaluate_heldout(loop, data.heldout_files, 64, 10)
    >>> reference = baselines(data.train_files, data.heldout_files, 64, 10, num_examples=metrics["examples"])
    >>> shown = predict_masked_words(loop.model, data.vocab_file, data.shown_sentences, 64)
    >>> print(format_report(metrics, reference, shown, SHOWN_RULE))
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
from main_job_data import masked_word_position

from keras_bert_lite.data import pretraining_dataset, pretraining_feature_spec
from keras_bert_lite.models import BertMaskedLM
from keras_bert_lite.text.preprocessor import BertPreprocessor

TOP_K = 5
_READ_BATCH = 1024


def heldout_steps(heldout_files: str, global_batch_size: int) -> int:
    """Whole global batches in the held-out TFRecords (a last partial batch is left out); checked
    before training too, so that too small a held-out set stops the run before its long part.

    Raises:
        ValueError: the held-out data has fewer examples than one global batch.
    """
    examples = sum(1 for _ in tf.data.TFRecordDataset(tf.io.gfile.glob(heldout_files)))
    if examples < global_batch_size:
        raise ValueError(f"The held-out data {heldout_files} has {examples} examples, fewer than one batch "
                         f"({global_batch_size}); use more documents.")
    return examples // global_batch_size


def evaluate_heldout(
    loop, heldout_files: str, seq_length: int, max_predictions_per_seq: int
) -> dict[str, float]:
    """Evaluates `loop.model` on the held-out TFRecords, in whole global batches.

    Args:
        loop: the `PretrainingLoop` the model was trained with (its strategy and batch size).
        heldout_files: glob of the held-out TFRecords.
        seq_length, max_predictions_per_seq: what the files were written with.

    Returns:
        `PretrainingLoop.evaluate`'s metrics and `examples`, the number of examples evaluated:
        the first ones, in file order (a last partial batch is left out).

    Raises:
        ValueError: the held-out data has fewer examples than one global batch.
    """
    steps = heldout_steps(heldout_files, loop.global_batch_size)
    iterator = iter(loop.distribute(lambda context: pretraining_dataset(
        heldout_files, loop.global_batch_size, seq_length, max_predictions_per_seq, is_training=False,
        input_context=context)))
    return dict(loop.evaluate(iterator, steps), examples=steps * loop.global_batch_size)


def label_counts(
    files: str | Sequence[str], seq_length: int, max_predictions_per_seq: int, num_examples: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Counts the masked-token labels and next-sentence labels of pre-training TFRecords.

    Args:
        files: a glob or list of globs of TFRecords in the original format, read in order.
        seq_length, max_predictions_per_seq: what the files were written with.
        num_examples: count only the first N examples (None: all).

    Returns:
        (token_counts int64 [max id + 1]: how often each id is a masked label (weight > 0),
        next_sentence_counts int64 [2]).
    """
    spec = pretraining_feature_spec(seq_length, max_predictions_per_seq)
    spec = {name: spec[name] for name in ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")}
    dataset = tf.data.TFRecordDataset(tf.io.gfile.glob(files) if isinstance(files, str) else
                                      [f for pattern in files for f in tf.io.gfile.glob(pattern)])
    if num_examples is not None:
        dataset = dataset.take(num_examples)
    dataset = dataset.batch(_READ_BATCH).map(lambda records: tf.io.parse_example(records, spec))
    tokens, nsp = np.zeros(0, np.int64), np.zeros(2, np.int64)
    for batch in dataset.as_numpy_iterator():
        ids = batch["masked_lm_ids"][batch["masked_lm_weights"] > 0]
        counts = np.bincount(ids, minlength=len(tokens))
        tokens = np.pad(tokens, (0, len(counts) - len(tokens))) + counts
        nsp += np.bincount(batch["next_sentence_labels"].ravel(), minlength=2)[:2]
    return tokens, nsp


def baselines(
    train_files: str,
    heldout_files: str,
    seq_length: int,
    max_predictions_per_seq: int,
    num_examples: int | None = None,
) -> dict:
    """Held-out accuracies of predicting from training-label frequencies alone.

    Args:
        train_files: glob of the training TFRecords.
        heldout_files: glob of the held-out TFRecords.
        seq_length, max_predictions_per_seq: what the files were written with.
        num_examples: the number of held-out examples evaluated (the first ones).

    Returns:
        A dict: `mlm_accuracy` (always the most frequent training label), `mlm_top5_accuracy`
        (the `TOP_K` most frequent), `nsp_accuracy` (the majority training label),
        `most_frequent_token_ids` (the `TOP_K` ids, most frequent first), `masked_tokens` and
        `examples` counted in the held-out data.
    """
    train_tokens, train_nsp = label_counts(train_files, seq_length, max_predictions_per_seq)
    heldout_tokens, heldout_nsp = label_counts(
        heldout_files, seq_length, max_predictions_per_seq, num_examples
    )
    if not heldout_tokens.sum() or not train_tokens.sum():
        raise ValueError(f"No masked tokens in {train_files if not train_tokens.sum() else heldout_files}.")
    top = np.argsort(-train_tokens, kind="stable")[:TOP_K]
    heldout_tokens = np.pad(heldout_tokens, (0, max(0, int(top.max()) + 1 - len(heldout_tokens))))
    total = heldout_tokens.sum()
    return dict(
        mlm_accuracy=float(heldout_tokens[top[0]] / total),
        mlm_top5_accuracy=float(heldout_tokens[top].sum() / total),
        nsp_accuracy=float(heldout_nsp[int(np.argmax(train_nsp))] / heldout_nsp.sum()),
        most_frequent_token_ids=[int(i) for i in top],
        masked_tokens=int(total),
        examples=int(heldout_nsp.sum()),
    )


def predict_masked_words(
    model,
    vocab_file: str,
    sentences: Sequence[tuple[str, int]],
    seq_length: int,
    lower_case: bool = True,
) -> list[dict]:
    """Masks one word of each sentence and returns the model's top predictions for it.

    Args:
        model: a `BertPretrainer`; its predictions are `BertMaskedLM.fill_mask`'s.
        vocab_file: the vocabulary the model was trained with.
        sentences: (sentence, index of the word to mask) pairs; the word must be one token of
            the vocabulary (as `shown_sentences` chooses them).
        seq_length: the length the sentences are packed to.
        lower_case: whether the vocabulary is uncased.

    Returns:
        One dict per sentence: `text` (with "[MASK]" for the word), `answer` (the masked token),
        `predictions` (`TOP_K` (token, probability) pairs, most likely first).
    """
    if not sentences:
        return []
    preprocessor = BertPreprocessor(vocab_file, seq_length=seq_length, lower_case=lower_case)
    tokenizer = preprocessor.tokenizer
    ids = preprocessor(tf.constant([s for s, _ in sentences]))["input_word_ids"].numpy()
    words = [sentence.split() for sentence, _ in sentences]
    positions = np.array([masked_word_position(tokenizer, sentence, index) for sentence, index in sentences])
    if positions.max() >= seq_length - 1:
        raise ValueError(f"A masked word lies beyond seq_length {seq_length}.")
    texts = [" ".join(sentence_words[:index] + [re.sub(r"^\w+", "[MASK]", sentence_words[index])]
                      + sentence_words[index + 1:]) for sentence_words, (_, index) in zip(words, sentences)]
    filled = BertMaskedLM.from_pretrainer(model, preprocessor).fill_mask(texts, top_k=TOP_K)
    return [
        dict(text=text, answer=tokenizer.id_to_token(int(ids[row, positions[row]])),
             predictions=[(candidate["token_str"], candidate["score"]) for candidate in candidates])
        for row, (text, candidates) in enumerate(zip(texts, filled))
    ]


def format_report(
    metrics: dict, reference: dict, shown: Sequence[dict], rule: str, curve: Sequence[dict] = ()
) -> str:
    """The printout of the main job: held-out accuracies next to baselines, then predictions.

    Args:
        metrics: held-out `PretrainingLoop.evaluate` results.
        reference: `baselines` of the same held-out examples.
        shown: `predict_masked_words` results.
        rule: how the shown sentences were chosen (printed with them).
        curve: earlier evaluations of the run (`run_pretraining`'s `evaluations`: `step`,
            `train_seconds`, `mlm_accuracy`), printed as the learning curve when there are two
            or more.

    Returns:
        The report (str, several lines).
    """
    lines = []
    if len(curve) > 1:
        points = ", ".join(f"{e['mlm_accuracy']:.3f} at step {e['step']} ({e['train_seconds'] / 60:.1f} min)"
                           for e in curve)
        lines += [f"Held-out MLM accuracy during training: {points}.", ""]
    lines += [
        f"Held-out documents: {reference['examples']} examples, {reference['masked_tokens']} masked tokens "
        "(never trained on).",
        f"  {'':24}{'model':>8}  baseline",
    ]
    for label, name, baseline in (
        ("MLM accuracy (top-1)", "mlm_accuracy", "the most frequent training token"),
        ("MLM accuracy (top-5)", "mlm_top5_accuracy", f"the {TOP_K} most frequent training tokens"),
        ("NSP accuracy", "nsp_accuracy", "the majority training label"),
    ):
        lines.append(f"  {label:24}{metrics[name]:8.4f}  {reference[name]:.4f}  ({baseline})")
    lines.append(f"  MLM loss {metrics['mlm_loss']:.4f}, NSP loss {metrics['nsp_loss']:.4f}")
    if shown:
        lines += ["", f"Top-{TOP_K} predictions for masked held-out words ({rule}):"]
    for example in shown:
        predictions = ", ".join(f"{token} ({p:.2f})" for token, p in example["predictions"])
        lines += [f"  {example['text']}", f"    answer: {example['answer']}   top-{TOP_K}: {predictions}"]
    return "\n".join(lines)
