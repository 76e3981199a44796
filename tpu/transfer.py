"""Does pre-training transfer? The main job's encoder fine-tuned on a task, against random init.

The task is made from the main job's held-out documents only (never trained on): which source a
held-out sentence comes from (Python's documentation, or the docstrings of one package). Its
labels are the documents' sources, known when the corpus is built; no download. The held-out
documents are split by document (not by sentence), class by class, into fine-tuning training,
validation and test documents, so the test sentences come from documents neither side has seen.

Both sides are the same `BertClassifier` architecture, fine-tuned the same way (BERT's AdamW with
warmup and linear decay, batch 32): one starts from the pre-trained encoder, the other from a
random initialisation of the same config. Each side picks its own learning rate from a small grid
by validation accuracy (averaged over the seeds); the test split is read once per side, with the
chosen rate. The result: both test accuracies, the gain in points and the majority-class baseline.

Example:

    >>> task = source_task(heldout_documents, heldout_sources)
    >>> result = transfer_gain(encoder, "output/pretrain/vocab.txt", task, seq_length=64)
    >>> result["pretrained_accuracy"], result["scratch_accuracy"], result["gain"]
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert_lite.models import BertClassifier, BertEncoder
from keras_bert_lite.text.preprocessor import BertPreprocessor
from keras_bert_lite.training.optimization import create_optimizer

# Held-out documents of each class: every SPLIT_EVERY-th goes to test, the next to validation.
SPLIT_EVERY = 4
# A source becomes a class when it has at least this many held-out documents (so that each of
# the three splits gets some); the others' sentences are left out.
MIN_CLASS_DOCUMENTS = 3 * SPLIT_EVERY
LEARNING_RATES = (1e-4, 3e-4, 1e-3)
EPOCHS = 3
BATCH_SIZE = 32
_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars"))


@dataclasses.dataclass(frozen=True)
class SourceTask:
    """Sentences labelled with the source of their document, split by document.

    Attributes:
        class_names: the sources that became classes, in label-id order.
        train, validation, test: (sentences, int32 label ids [N]) pairs.
    """

    class_names: tuple[str, ...]
    train: tuple[list[str], np.ndarray]
    validation: tuple[list[str], np.ndarray]
    test: tuple[list[str], np.ndarray]


def source_task(
    documents: Sequence[Sequence[str]],
    sources: Sequence[str],
    max_sentences: tuple[int, int, int] = (3000, 1000, 1000),
    min_class_documents: int = MIN_CLASS_DOCUMENTS,
) -> SourceTask:
    """The "which source is this sentence from" task over held-out documents.

    Args:
        documents: the held-out documents, each a list of sentences (str); nothing else may be
            passed (the task must not see training text).
        sources: the source of each document ("python", "numpy", ...), same length.
        max_sentences: at most this many (training, validation, test) sentences, taken evenly
            spaced (the same ones on every run).
        min_class_documents: sources with fewer held-out documents are left out.

    Returns:
        A `SourceTask`; classes are sorted by name.

    Raises:
        ValueError: `sources` does not match `documents`, or fewer than two sources have enough
            documents.
    """
    if len(documents) != len(sources):
        raise ValueError(f"source_task: {len(documents)} documents but {len(sources)} sources.")
    counts = Counter(sources)
    names = tuple(sorted(name for name, count in counts.items() if count >= min_class_documents))
    if len(names) < 2:
        raise ValueError(f"source_task: fewer than two sources have {min_class_documents}+ held-out documents "
                         f"({dict(counts)}); use more documents.")
    splits: list[tuple[list[str], list[int]]] = [([], []), ([], []), ([], [])]
    seen = Counter()
    for document, source in zip(documents, sources):
        if source not in names:
            continue
        position = seen[source] % SPLIT_EVERY
        seen[source] += 1
        # Position 0 of every SPLIT_EVERY documents: test (splits[2]); 1: validation; the rest: training.
        sentences, labels = splits[0 if position > 1 else 2 - position]
        sentences += document
        labels += [names.index(source)] * len(document)
    taken = []
    for (sentences, labels), limit in zip(splits, max_sentences):
        keep = np.linspace(0, len(sentences) - 1, num=min(limit, len(sentences))).astype(int) if sentences else []
        taken.append(([sentences[i] for i in keep], np.array([labels[i] for i in keep], "int32")))
    return SourceTask(names, *taken)


def _token_ids(preprocessor: BertPreprocessor, sentences: list[str]) -> dict[str, np.ndarray]:
    return {name: value.numpy() for name, value in preprocessor(tf.constant(sentences)).items()}


def _fine_tune(encoder: BertEncoder, num_classes: int, learning_rate: float, train, evaluate: list, seed: int,
               epochs: int) -> list[float]:
    """Fine-tunes a classifier on `encoder` (changed in place); returns its accuracy on each of `evaluate`."""
    keras.utils.set_random_seed(seed)
    model = BertClassifier(encoder, num_classes)
    steps = epochs * -(-len(train[1]) // BATCH_SIZE)
    model.compile(optimizer=create_optimizer(learning_rate, steps, steps // 10),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(train[0], train[1], batch_size=BATCH_SIZE, epochs=epochs, verbose=0)
    # One predict call over all evaluation splits (one trace of the predict function).
    inputs = {name: np.concatenate([x[name] for x, _ in evaluate]) for name in evaluate[0][0]}
    correct = np.argmax(model.predict(inputs, batch_size=256, verbose=0), -1) == np.concatenate([y for _, y in evaluate])
    return [float(part.mean()) for part in np.split(correct, np.cumsum([len(y) for _, y in evaluate])[:-1])]


def transfer_gain(
    encoder: BertEncoder,
    vocab_file: str,
    task: SourceTask,
    seq_length: int = 64,
    lower_case: bool = True,
    seeds: Sequence[int] = (1,),
    learning_rates: Sequence[float] = LEARNING_RATES,
    epochs: int = EPOCHS,
) -> dict:
    """Fine-tunes a copy of `encoder` and a randomly initialised twin on `task`; compares them.

    Args:
        encoder: the pre-trained `BertEncoder` (not changed: each run fine-tunes a copy).
        vocab_file: the vocabulary it was pre-trained with.
        task: a `SourceTask` (see `source_task`).
        seq_length: tokens per packed sentence.
        lower_case: whether the vocabulary is uncased.
        seeds: seeds of the random init, the classifier head, dropout and shuffling; each side
            runs once per seed and learning rate, and accuracies are averaged over the seeds.
        learning_rates: the grid each side chooses its peak learning rate from (by validation
            accuracy).
        epochs: fine-tuning epochs over the training sentences.

    Returns:
        A dict of floats and lists, ready for metrics.json: `pretrained_accuracy`,
        `scratch_accuracy` (test accuracy at each side's chosen rate, averaged over `seeds`),
        `gain` (their difference, in accuracy points x 100), `majority_accuracy` (always the most
        frequent training class), `pretrained_learning_rate`, `scratch_learning_rate`,
        `validation` ({side: [validation accuracy per learning rate]}), `classes`, `sentences`
        ([train, validation, test]), `seconds`.
    """
    started = time.perf_counter()
    preprocessor = BertPreprocessor(vocab_file, seq_length=seq_length, lower_case=lower_case)
    train, validation, test = ((_token_ids(preprocessor, x), y) for x, y in (task.train, task.validation, task.test))
    weights = encoder.get_weights()
    result: dict = dict(classes=list(task.class_names), sentences=[len(split[1]) for split in (train, validation, test)],
                        validation={}, learning_rates=list(learning_rates))
    for side in ("pretrained", "scratch"):
        runs = np.zeros((len(learning_rates), len(seeds), 2))  # [rate, seed, (validation, test)]
        for i, learning_rate in enumerate(learning_rates):
            for j, seed in enumerate(seeds):
                keras.utils.set_random_seed(seed)
                copy = BertEncoder(encoder.config)
                if side == "pretrained":
                    copy.set_weights(weights)
                runs[i, j] = _fine_tune(copy, len(task.class_names), learning_rate, train, [validation, test],
                                        seed, epochs)
                logging.info("Transfer: %s encoder, learning rate %g, seed %d: validation accuracy %.4f, test %.4f "
                             "(%.0f s).", side, learning_rate, seed, *runs[i, j], time.perf_counter() - started)
        best = int(np.argmax(runs[:, :, 0].mean(axis=1)))
        result["validation"][side] = [round(float(v), 4) for v in runs[:, :, 0].mean(axis=1)]
        result[f"{side}_learning_rate"] = float(learning_rates[best])
        result[f"{side}_accuracy"] = float(runs[best, :, 1].mean())
    result["gain"] = 100.0 * (result["pretrained_accuracy"] - result["scratch_accuracy"])
    majority = np.bincount(train[1]).argmax()
    result["majority_accuracy"] = float(np.mean(test[1] == majority))
    result["seconds"] = time.perf_counter() - started
    return result


def write_summaries(logdir: str, result: dict, step: int) -> None:
    """Writes `transfer_gain`'s accuracies and gain as TensorBoard scalars under `logdir`.

    With `tf.summary.write` and the scalars plugin's metadata, as the pre-training summaries: no
    `tensorboard` package is needed to write them.
    """
    scalars = {f"transfer/{name}": result[name] for name in ("pretrained_accuracy", "scratch_accuracy",
                                                              "majority_accuracy")}
    scalars["transfer/gain_points"] = result["gain"]
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
        for name, value in scalars.items():
            tf.summary.write(name, tf.constant(value, tf.float32), step=step, metadata=_SCALAR_METADATA)
    writer.close()


def format_result(result: dict) -> str:
    """The printout: both test accuracies, the gain and the baseline."""
    return (f"Transfer to a held-out task (the source of a held-out sentence: {', '.join(result['classes'])}; "
            f"{result['sentences'][0]} / {result['sentences'][1]} / {result['sentences'][2]} sentences to "
            f"fine-tune / choose the learning rate / test):\n"
            f"  pre-trained encoder   {result['pretrained_accuracy']:.4f}  (lr {result['pretrained_learning_rate']:g})\n"
            f"  random init           {result['scratch_accuracy']:.4f}  (lr {result['scratch_learning_rate']:g})\n"
            f"  gain {result['gain']:+.1f} points; majority class {result['majority_accuracy']:.4f}")
