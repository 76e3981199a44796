"""Does pre-training transfer? The main job's encoder fine-tuned on a task, against random init.

Part of the main job, next to `pretrain.py`. The task is made from the main job's held-out
documents only (never trained on): given two held-out sentences, do they come from the same
document? Half of the pairs take their second sentence from the first one's document (any other
sentence of it, not only the next one), half from another document; the labels are known by
construction, no download. The held-out documents are split by document into fine-tuning
training, validation and test documents, so the test pairs come from documents neither side has
seen. Pre-training's next-sentence task is the nearest thing the encoder saw; the classifier
head here is new and only the encoder's weights carry over.

Both sides are the same `BertClassifier` architecture, fine-tuned the same way (BERT's AdamW with
10 % warmup and linear decay, batch 32): one starts from the pre-trained encoder, the other from a
random initialisation of the same config. Each side picks its own learning rate from a grid by
validation accuracy (averaged over the seeds); the test pairs are read once per side, with the
chosen rate. The result: both test accuracies, the gain in points and the majority-class baseline.

Example:

    >>> task = same_document_task(heldout_documents)
    >>> result = transfer_gain(encoder, "output/pretrain/vocab.txt", task, seq_length=32)
    >>> result["pretrained_accuracy"], result["scratch_accuracy"], result["gain"]
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert_lite.models import BertClassifier, BertEncoder
from keras_bert_lite.optimization import create_optimizer
from keras_bert_lite.text.preprocessor import BertPreprocessor

# Of every SPLIT_EVERY usable held-out documents the first goes to test, the next to validation.
SPLIT_EVERY = 4
LEARNING_RATES = (1e-4, 3e-4)
EPOCHS = 3
BATCH_SIZE = 32
TASK = "do two held-out sentences come from the same document?"
_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars"))


@dataclasses.dataclass(frozen=True)
class PairTask:
    """Sentence pairs labelled 1 when both come from the same document, split by document.

    Attributes:
        train, validation, test: (first sentences, second sentences, int32 labels [N]); half of
            each split's labels are 1.
    """

    train: tuple[list[str], list[str], np.ndarray]
    validation: tuple[list[str], list[str], np.ndarray]
    test: tuple[list[str], list[str], np.ndarray]


def same_document_task(
    documents: Sequence[Sequence[str]], num_pairs: tuple[int, int, int] = (3000, 1000, 1000), seed: int = 0
) -> PairTask:
    """The "same document?" task over held-out documents.

    Args:
        documents: the held-out documents, each a list of sentences (str); nothing else may be
            passed (the task must not see training text). Documents of one sentence are left out.
        num_pairs: (training, validation, test) pairs to draw.
        seed: seed of the draw (the same pairs on every run with the same documents).

    Returns:
        A `PairTask`: pair k of a split is labelled k % 2; its first sentence is drawn from a
        document of the split, its second from the same document (another sentence) or from
        another document of the split.

    Raises:
        ValueError: fewer than 2 * SPLIT_EVERY documents have two sentences or more (each
            split needs two documents).
    """
    usable = [list(d) for d in documents if len(d) >= 2]
    if len(usable) < 2 * SPLIT_EVERY:
        raise ValueError(f"same_document_task: {len(usable)} held-out documents have two sentences or more; "
                         f"{2 * SPLIT_EVERY} are needed (two per split).")
    by_split = ([d for i, d in enumerate(usable) if i % SPLIT_EVERY > 1], usable[1::SPLIT_EVERY],
                usable[::SPLIT_EVERY])
    rng = np.random.default_rng(seed)
    splits = []
    for split_documents, count in zip(by_split, num_pairs):
        first, second, labels = [], [], np.arange(count, dtype="int32") % 2
        for label in labels:
            i = rng.integers(len(split_documents))
            a = rng.integers(len(split_documents[i]))
            if label:
                j, b = i, (a + rng.integers(1, len(split_documents[i]))) % len(split_documents[i])
            else:
                j = (i + rng.integers(1, len(split_documents))) % len(split_documents)
                b = rng.integers(len(split_documents[j]))
            first.append(split_documents[i][a])
            second.append(split_documents[j][b])
        splits.append((first, second, labels))
    return PairTask(*splits)


def _token_ids(preprocessor: BertPreprocessor, first: list[str], second: list[str]) -> dict[str, np.ndarray]:
    return {name: value.numpy() for name, value in preprocessor((tf.constant(first), tf.constant(second))).items()}


def _fine_tune(encoder: BertEncoder, learning_rate: float, train, evaluate: list, seed: int, epochs: int) -> list[float]:
    """Fine-tunes a two-class classifier on `encoder` (changed in place); returns its accuracy on
    each (inputs, labels) of `evaluate`."""
    keras.utils.set_random_seed(seed)
    model = BertClassifier(encoder, 2)
    steps = epochs * -(-len(train[1]) // BATCH_SIZE)
    model.compile(optimizer=create_optimizer(learning_rate, steps, steps // 10),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(train[0], train[1], batch_size=BATCH_SIZE, epochs=epochs, verbose=0)
    # One eager call over all evaluation splits: a few thousand short pairs, and no predict function
    # traced per model (TensorFlow warns about retracing after a few).
    inputs = {name: np.concatenate([x[name] for x, _ in evaluate]) for name in evaluate[0][0]}
    logits = model(inputs, training=False)
    correct = np.argmax(keras.ops.convert_to_numpy(logits), -1) == np.concatenate([y for _, y in evaluate])
    return [float(part.mean()) for part in np.split(correct, np.cumsum([len(y) for _, y in evaluate])[:-1])]


def transfer_gain(
    encoder: BertEncoder,
    vocab_file: str,
    task: PairTask,
    seq_length: int,
    lower_case: bool = True,
    seeds: Sequence[int] = (1,),
    learning_rates: Sequence[float] = LEARNING_RATES,
    epochs: int = EPOCHS,
) -> dict:
    """Fine-tunes a copy of `encoder` and a randomly initialised twin on `task`; compares them.

    Args:
        encoder: the pre-trained `BertEncoder` (not changed: each run fine-tunes a copy).
        vocab_file: the vocabulary it was pre-trained with.
        task: a `PairTask` (see `same_document_task`).
        seq_length: tokens per packed pair.
        lower_case: whether the vocabulary is uncased.
        seeds: seeds of the random init, the classifier head and shuffling; each side runs once
            per seed and learning rate, and accuracies are averaged over the seeds.
        learning_rates: the grid each side chooses its peak learning rate from (by validation
            accuracy).
        epochs: fine-tuning epochs over the training pairs.

    Returns:
        A dict of floats and lists, ready for metrics.json: `pretrained_accuracy`,
        `scratch_accuracy` (test accuracy at each side's chosen rate, averaged over `seeds`),
        `gain` (their difference, in accuracy points), `majority_accuracy` (always the most
        frequent training label), `pretrained_learning_rate`, `scratch_learning_rate`,
        `learning_rates`, `validation` ({side: [validation accuracy per learning rate]}), `pairs`
        ([train, validation, test]), `seconds`.
    """
    started = time.perf_counter()
    preprocessor = BertPreprocessor(vocab_file, seq_length=seq_length, lower_case=lower_case)
    train, validation, test = ((_token_ids(preprocessor, a, b), y) for a, b, y in (task.train, task.validation,
                                                                                   task.test))
    weights = encoder.get_weights()
    result: dict = dict(pairs=[len(split[1]) for split in (train, validation, test)], validation={},
                        learning_rates=list(learning_rates))
    for side in ("pretrained", "scratch"):
        runs = np.zeros((len(learning_rates), len(seeds), 2))  # [rate, seed, (validation, test)]
        for i, learning_rate in enumerate(learning_rates):
            for j, seed in enumerate(seeds):
                keras.utils.set_random_seed(seed)
                copy = BertEncoder(encoder.config)
                if side == "pretrained":
                    copy.set_weights(weights)
                runs[i, j] = _fine_tune(copy, learning_rate, train, [validation, test], seed, epochs)
                logging.info("Transfer: %s encoder, learning rate %g, seed %d: validation accuracy %.4f (%.0f s).",
                             side, learning_rate, seed, runs[i, j, 0], time.perf_counter() - started)
        best = int(np.argmax(runs[:, :, 0].mean(axis=1)))
        result["validation"][side] = [round(float(v), 4) for v in runs[:, :, 0].mean(axis=1)]
        result[f"{side}_learning_rate"] = float(learning_rates[best])
        result[f"{side}_accuracy"] = float(runs[best, :, 1].mean())
    result["gain"] = 100.0 * (result["pretrained_accuracy"] - result["scratch_accuracy"])
    result["majority_accuracy"] = float(np.mean(test[1] == np.bincount(train[1]).argmax()))
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
    train, validation, test = result["pairs"]
    rates = ", ".join(f"{rate:g}" for rate in result["learning_rates"])
    return (f"Transfer to a held-out task ({TASK} {train} / {validation} / {test} pairs from held-out documents "
            f"to fine-tune / choose the learning rate among {rates} / test):\n"
            f"  pre-trained encoder   {result['pretrained_accuracy']:.4f}  (lr {result['pretrained_learning_rate']:g})\n"
            f"  random init           {result['scratch_accuracy']:.4f}  (lr {result['scratch_learning_rate']:g})\n"
            f"  gain {result['gain']:+.1f} points; majority class {result['majority_accuracy']:.4f}")
