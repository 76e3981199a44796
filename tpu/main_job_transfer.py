"""Does pre-training transfer? The main job's encoder fine-tuned on a suite of tasks, against random init.

Part of the main job, `main_job.py`. Every task classifies single sentences of documents
kept out of pre-training (`main_job_data.split_heldout`: the masked-LM held-out documents and as
many more kept out for these tasks), by where the sentence comes from. None is a pre-training
objective (no sentence pair, no replaced word), and the labels are made without a person, from the
module each document was read from (`main_job_data.corpus_documents`):

- `python_or_package`: Python's own documentation (help topics, standard-library docstrings) or a
  package's docstrings (NumPy, TensorFlow, Keras, ...)?
- `numpy_or_tensorflow`: a NumPy docstring or a TensorFlow one?
- `keras_or_tensorflow`: a Keras docstring or a TensorFlow one (not of TensorFlow's own copy of
  Keras)?

Each task is split by document: a document's sentences all go to one of training, validation and
test, so test sentences come from documents neither side has seen (documents go in corpus order to
the split furthest below its share). At most `MAX_SENTENCES_PER_DOCUMENT` sentences of a document
are used, so that no long document dominates a class. Every split has as many sentences of each
class (`SPLIT_SIZES` per class: few labels, as fine-tuning usually has), drawn with a fixed seed.

Both sides are the same `BertClassifier` architecture, fine-tuned the same way, as a user would:
`compile(learning_rate=rate)` (the default AdamW at a constant rate), batch 32, `EPOCHS` epochs,
`SEQ_LENGTH` tokens. One starts from the pre-trained encoder, the other from a random initialisation
of the same config. Each side picks its rate from the grid by validation accuracy; the result is the
test accuracy at that rate, with the majority-class baseline.

Example:

    >>> tasks = build_tasks(documents, sources)
    >>> result = transfer_suite(encoder, "output/pretrain/vocab.txt", tasks)
    >>> result["tasks"]["numpy_or_tensorflow"]["pretrained"], result["mean_gain"]
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert_lite.data.corpora import DEPENDENCY_PACKAGES
from keras_bert_lite.models import BertClassifier, BertEncoder
from keras_bert_lite.text.preprocessor import BertPreprocessor

LEARNING_RATES = (5e-5, 3e-4, 1e-3)
EPOCHS = 8
BATCH_SIZE = 32
SEQ_LENGTH = 64
# Sentences of each class in the training, validation and test splits of every task.
SPLIT_SIZES = (250, 100, 200)
SPLITS = ("train", "validation", "test")
MAX_SENTENCES_PER_DOCUMENT = 80
# A task whose random-init side is not this far above the majority class measures little.
LEARNABLE_MARGIN = 0.10
_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars"))


def _package(source: str) -> str:
    """The package of a document's source ("numpy._core.fromnumeric" -> "numpy"), "python" for
    Python's own documentation (help topics and the standard library). TensorFlow's own copy of
    Keras ("tensorflow.python.keras.layers") is "tensorflow.keras", in neither TensorFlow's class
    nor Keras'."""
    parts = source.split(".")
    if parts[0] == "tensorflow" and "keras" in parts:
        return "tensorflow.keras"
    return parts[0] if parts[0] in DEPENDENCY_PACKAGES else "python"


def _one_of(*packages: str) -> Callable[[str], int | None]:
    return lambda source: packages.index(_package(source)) if _package(source) in packages else None


# name: (question, class names, label of a document's source: class index or None to leave it out).
TASKS: dict[str, tuple[str, tuple[str, ...], Callable[[str], int | None]]] = {
    "python_or_package": ("Python's documentation or a package's docstring?", ("python", "package"),
                          lambda source: int(_package(source) != "python")),
    "numpy_or_tensorflow": ("NumPy or TensorFlow docstring?", ("numpy", "tensorflow"),
                            _one_of("numpy", "tensorflow")),
    "keras_or_tensorflow": ("Keras or TensorFlow docstring?", ("keras", "tensorflow"),
                            _one_of("keras", "tensorflow")),
}


@dataclasses.dataclass(frozen=True)
class SentenceTask:
    """A sentence classification task, split by document.

    Attributes:
        name: the task's name (a key of `TASKS`).
        train, validation, test: (sentences, int32 labels [N]); each class has the same number of
            sentences in a split.
    """

    name: str
    train: tuple[list[str], np.ndarray]
    validation: tuple[list[str], np.ndarray]
    test: tuple[list[str], np.ndarray]


def build_tasks(
    documents: Sequence[Sequence[str]], sources: Sequence[str], sizes: tuple[int, int, int] = SPLIT_SIZES,
    seed: int = 0,
) -> dict[str, SentenceTask]:
    """The suite's tasks from documents kept out of pre-training.

    Args:
        documents: the documents, each a list of sentences (str); nothing else may be passed (the
            tasks must not hold pre-training text).
        sources: the source of each document (`main_job_data.corpus_documents`).
        sizes: sentences of each class in the training, validation and test splits.
        seed: seed of the draw (the same sentences on every run with the same documents).

    Returns:
        {name: `SentenceTask`} for every task of `TASKS`.

    Raises:
        ValueError: a split of a task has too few sentences of a class (naming them).
    """
    if len(documents) != len(sources):
        raise ValueError(f"build_tasks: {len(documents)} documents but {len(sources)} sources.")
    tasks = {}
    for name, (_, classes, label_of) in TASKS.items():
        rng = np.random.default_rng(seed)
        splits: list[tuple[list[str], list[int]]] = [([], []) for _ in SPLITS]
        for label, class_name in enumerate(classes):
            chosen = [[] for _ in SPLITS]  # sentences of this class per split
            for document, source in zip(documents, sources):
                if label_of(source) != label:
                    continue
                # The split furthest below its share of this class's sentences takes the document.
                index = int(np.argmin([len(c) / size for c, size in zip(chosen, sizes)]))
                step = max(1, len(document) // MAX_SENTENCES_PER_DOCUMENT)
                chosen[index] += list(document[::step][:MAX_SENTENCES_PER_DOCUMENT])
            for split, sentences, size, (texts, labels) in zip(SPLITS, chosen, sizes, splits):
                if len(sentences) < size:
                    raise ValueError(f"task {name}: {len(sentences)} {class_name} sentences for its {split} split "
                                     f"from the documents kept out of pre-training, {size} needed.")
                texts += [sentences[i] for i in sorted(rng.choice(len(sentences), size, replace=False))]
                labels += [label] * size
        tasks[name] = SentenceTask(name, *((texts, np.asarray(labels, "int32")) for texts, labels in splits))
    return tasks


class _FineTuner:
    """One classifier per side and number of classes, fine-tuned again from the same start for
    every task and rate: its variables (weights and dropout's seed states) and optimizer state are
    reset and the rate set, so Keras traces its training step once, not once per run (tracing
    costs more than a run's steps), and every run computes what a first run in a new process would."""

    def __init__(self, encoder: BertEncoder, seed: int):
        self.encoder, self.seed, self.models = encoder, seed, {}

    def run(self, num_classes: int, learning_rate: float, train, evaluate: list, epochs: int) -> list[float]:
        """Fine-tunes from the start at `learning_rate`, as a user would (`compile(learning_rate=...)`,
        batch 32); returns the accuracy on each (inputs, labels) of `evaluate`."""
        if num_classes not in self.models:
            keras.utils.set_random_seed(self.seed)
            model = BertClassifier(BertEncoder(self.encoder.config), num_classes)
            model.encoder.set_weights(self.encoder.get_weights())
            model.compile(learning_rate=learning_rate)
            # model.variables, not get_weights(): dropout's seed states too, so each run draws the same masks.
            self.models[num_classes] = (model, [(v, keras.ops.convert_to_numpy(v)) for v in model.variables])
        model, start = self.models[num_classes]
        for variable, value in start:
            variable.assign(value)
        for variable in model.optimizer.variables:  # a fresh optimizer: no moments, step 0
            variable.assign(tf.zeros_like(variable))
        model.optimizer.learning_rate = learning_rate
        keras.utils.set_random_seed(self.seed)
        model.fit(train[0], train[1], batch_size=BATCH_SIZE, epochs=epochs, verbose=0)
        # One eager call over all evaluation splits: no predict function traced.
        inputs = {name: np.concatenate([x[name] for x, _ in evaluate]) for name in evaluate[0][0]}
        logits = model(inputs, training=False)
        correct = np.argmax(keras.ops.convert_to_numpy(logits), -1) == np.concatenate([y for _, y in evaluate])
        return [float(part.mean()) for part in np.split(correct, np.cumsum([len(y) for _, y in evaluate])[:-1])]


def transfer_suite(
    encoder: BertEncoder,
    vocab_file: str,
    tasks: dict[str, SentenceTask],
    seq_length: int = SEQ_LENGTH,
    lower_case: bool = True,
    seed: int = 1,
    learning_rates: Sequence[float] = LEARNING_RATES,
    epochs: int = EPOCHS,
) -> dict:
    """Fine-tunes a copy of `encoder` and a randomly initialised twin on every task; compares them.

    Args:
        encoder: the pre-trained `BertEncoder` (not changed: each run fine-tunes a copy).
        vocab_file: the vocabulary it was pre-trained with.
        tasks: `build_tasks`'s tasks.
        seq_length: tokens per sentence (at most the encoder's max_position_embeddings).
        lower_case: whether the vocabulary is uncased.
        seed: seed of the random init, the classifier head and shuffling.
        learning_rates: the grid each side chooses its rate from, by validation accuracy.
        epochs: fine-tuning epochs over the training sentences.

    Returns:
        A dict ready for metrics.json: `tasks` ({name: {`pretrained`, `random_init` (test
        accuracy at each side's chosen rate), `majority` (test accuracy of the most frequent
        training label), `train_examples`, `validation_examples`, `test_examples`,
        `learning_rates` ({side: chosen rate}), `validation` ({side: [validation accuracy per
        rate]}), `gain` (points)}}), `mean_gain` (mean of the gains, in points), `grid`, `epochs`,
        `seq_length`, `batch_size`, `seconds`.
    """
    started = time.perf_counter()
    preprocessor = BertPreprocessor(vocab_file, seq_length=seq_length, lower_case=lower_case)
    keras.utils.set_random_seed(seed)
    tuners = {"pretrained": _FineTuner(encoder, seed), "random_init": _FineTuner(BertEncoder(encoder.config), seed)}
    results = {}
    for name, task in tasks.items():
        train, validation, test = (({k: v.numpy() for k, v in preprocessor(tf.constant(texts)).items()}, labels)
                                   for texts, labels in (task.train, task.validation, task.test))
        num_classes = len(TASKS[name][1]) if name in TASKS else int(task.train[1].max()) + 1
        result: dict = dict(train_examples=len(train[1]), validation_examples=len(validation[1]),
                            test_examples=len(test[1]), learning_rates={}, validation={})
        for side, tuner in tuners.items():
            runs = []  # [rate] -> (validation, test)
            for learning_rate in learning_rates:
                runs.append(tuner.run(num_classes, learning_rate, train, [validation, test], epochs))
                logging.info("Transfer %s: %s encoder, learning rate %g: validation accuracy %.4f (%.0f s).",
                             name, side, learning_rate, runs[-1][0], time.perf_counter() - started)
            best = int(np.argmax([v for v, _ in runs]))
            result["validation"][side] = [round(v, 4) for v, _ in runs]
            result["learning_rates"][side] = float(learning_rates[best])
            result[side] = runs[best][1]
        result["majority"] = float(np.mean(test[1] == np.bincount(train[1]).argmax()))
        result["gain"] = 100.0 * (result["pretrained"] - result["random_init"])
        results[name] = result
    return dict(tasks=results, mean_gain=float(np.mean([r["gain"] for r in results.values()])),
                grid=[float(rate) for rate in learning_rates], epochs=epochs, seq_length=seq_length,
                batch_size=BATCH_SIZE, seconds=time.perf_counter() - started)


def write_summaries(logdir: str, result: dict, step: int) -> None:
    """Writes `transfer_suite`'s accuracies and gains as TensorBoard scalars under `logdir`
    (`transfer/<task>/pretrained`, `.../random_init`, `.../majority`, `.../gain_points`,
    `transfer/mean_gain_points`).

    With `tf.summary.write` and the scalars plugin's metadata, as the pre-training summaries: no
    `tensorboard` package is needed to write them.
    """
    scalars = {"transfer/mean_gain_points": result["mean_gain"]}
    for name, task in result["tasks"].items():
        scalars.update({f"transfer/{name}/{key}": task[key] for key in ("pretrained", "random_init", "majority")})
        scalars[f"transfer/{name}/gain_points"] = task["gain"]
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
        for name, value in scalars.items():
            tf.summary.write(name, tf.constant(value, tf.float32), step=step, metadata=_SCALAR_METADATA)
    writer.close()


def format_result(result: dict) -> str:
    """The printout: per task both test accuracies (with the chosen rates), the gain and the
    majority baseline; then the mean gain."""
    first = next(iter(result["tasks"].values()))
    rates = ", ".join(f"{rate:g}" for rate in result["grid"])
    lines = [f"Transfer to tasks that are not pre-training objectives (sentences of documents kept out of "
             f"pre-training; {first['train_examples']} / {first['validation_examples']} / {first['test_examples']} "
             f"to fine-tune / choose the learning rate among {rates} / test; {result['epochs']} epoch(s), "
             f"{result['seq_length']} tokens, batch {result['batch_size']}):",
             f"  {'task':<22}{'pre-trained':<20}{'random init':<20}{'gain':>7}   majority"]
    for name, task in result["tasks"].items():
        sides = [f"{task[side]:.4f} (lr {task['learning_rates'][side]:g})" for side in ("pretrained", "random_init")]
        note = "" if task["random_init"] >= task["majority"] + LEARNABLE_MARGIN else \
            "  (random init not 10 points above majority: the task measures little)"
        lines.append(f"  {name:<22}{sides[0]:<20}{sides[1]:<20}{task['gain']:>+7.1f}   {task['majority']:.4f}{note}")
    lines.append(f"  mean gain {result['mean_gain']:+.1f} points")
    return "\n".join(lines)
