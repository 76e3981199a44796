"""Does a checkpoint's pre-training transfer to text its corpus never drew from? Fine-tuned as a user would.

Two sentence classification tasks, labels made without a person, split by source file so that test
sentences come from files neither side trained on:

- `torch_or_transformers` (in domain: docstrings, but of packages the built-in corpus does not hold):
  a sentence of PyTorch's docstrings or of Hugging Face transformers'? Sentences the corpus also
  holds, and sentences under 5 words, are dropped. Any two installed packages outside the corpus
  make such a task: `--tasks=networkx_or_sympy`.
- `changelog_fix_or_add` (another kind of text): does an item of a Debian changelog or NEWS file
  (`/usr/share/doc/*/changelog*.gz`, `NEWS*.gz`) start with "fix" or with "add" (any tense)? The
  verb is removed; items of 5-40 words, split by package.

For each task, side and rate, what runs is what a user types, on `--train_examples` balanced
sentences (the test split: `--test_examples`):

    model = kbl.BertClassifier.from_checkpoint(checkpoint, num_classes=2, seq_length=64)
    # random init: kbl.BertClassifier(kbl.BertEncoder(model.encoder.config), 2, preprocessor=...)
    model.compile(learning_rate=rate)
    model.fit(train_texts, train_labels, epochs=8, batch_size=32)

It prints, per task and side, the test accuracy at each rate (mean over `--seeds`, each seed a new
classifier head, random init and shuffling), and the gain at each side's best rate.

Usage:

    python benchmarks/transfer_outside_corpus.py --checkpoint=output/pretrain
    python benchmarks/transfer_outside_corpus.py --checkpoint=DIR --seeds=1,2,3 --tasks=changelog_fix_or_add
    python benchmarks/transfer_outside_corpus.py --checkpoint=DIR --reinitialize=transformer_layer_0,transformer_layer_1
    python benchmarks/transfer_outside_corpus.py --checkpoint=DIR --layer_rate_decay=0.5
    python benchmarks/transfer_outside_corpus.py --checkpoint=DIR --pooling=mean
    python benchmarks/transfer_outside_corpus.py --checkpoint=HF_FOLDER --sides=pretrained --learning_rates=5e-5,1e-4
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import glob  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

from keras_bert_lite.data import builtin_documents  # noqa: E402
from keras_bert_lite.data.corpora import DEPENDENCY_PACKAGES, builtin_corpus_modules  # noqa: E402
from keras_bert_lite.layers.pooling import POOLING_MODES  # noqa: E402
from keras_bert_lite.models import BertClassifier, BertEncoder  # noqa: E402
from keras_bert_lite.models.classifier import check_pooling  # noqa: E402
from keras_bert_lite.models.task_model import default_optimizer  # noqa: E402
from keras_bert_lite.optimization import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("checkpoint", "output/pretrain", "Checkpoint folder of any kind `from_checkpoint` takes.")
flags.DEFINE_list("tasks", ["torch_or_transformers", "changelog_fix_or_add"], "Tasks to run.")
flags.DEFINE_list("learning_rates", ["5e-5", "3e-4", "1e-3"], "The grid both sides choose their rate from.")
flags.DEFINE_list("seeds", ["1", "2"], "Seeds of the head, the random init and the shuffling: one run each.")
flags.DEFINE_integer("train_examples", 500, "Balanced training sentences per task.")
flags.DEFINE_integer("test_examples", 1000, "Balanced test sentences per task.")
flags.DEFINE_integer("epochs", 8, "Epochs of fit.")
flags.DEFINE_integer("seq_length", 64, "Tokens per sentence.")
flags.DEFINE_list("reinitialize", [], "Layers of the encoder (embeddings, transformer_layer_0, ..., pooler) "
                  "that the pre-trained side takes from its random-init twin: which parts transfer?")
flags.DEFINE_float("layer_rate_decay", 1.0, "Layer-wise learning-rate decay (ELECTRA's fine-tuning) for both sides: "
                   "the head, pooler and top layer train at the rate, each layer below at this factor times the "
                   "one above, the embeddings at it once more. 1: compile()'s one rate for all.", lower_bound=0)
flags.DEFINE_list("sides", ["pretrained", "random_init"], "Which sides to fine-tune; the gain needs both. "
                  "`--sides=pretrained` measures a checkpoint alone, e.g. a larger model as a task's ceiling.")
flags.register_validator("sides", lambda sides: bool(sides) and set(sides) <= {"pretrained", "random_init"},
                         "must be pretrained, random_init or both")
flags.DEFINE_list("pooling", ["pooler"], "BertClassifier's pooling on both sides: pooler (the paper's pooled [CLS]) "
                  "or SentencePooling modes, e.g. mean.")


def _known_pooling(modes: list[str]) -> bool:
    """Whether `BertClassifier` takes `--pooling`, checked before any task is built."""
    try:
        return bool(check_pooling(modes))
    except ValueError:
        return False


flags.register_validator("pooling", _known_pooling, f"must be pooler or distinct modes of {POOLING_MODES}")

CHANGELOG_FILES = "/usr/share/doc/*/changelog*.gz", "/usr/share/doc/*/NEWS*.gz"
FIX, ADD = {"fix", "fixed", "fixes", "fixing"}, {"add", "added", "adds", "adding"}


def package_files(package: str, corpus_sentences: set[str]) -> list[list[str]]:
    """Per source file of `package`'s docstrings, its sentences of 5 words or more not in the corpus."""
    files = builtin_documents(packages=(package,))[len(builtin_documents()):]  # the package's own
    if not files:
        raise ValueError(f"No prose docstrings found in the sources of {package}.")
    return [[s for s in f if len(s.split()) >= 5 and _key(s) not in corpus_sentences] for f in files]


def changelog_files() -> list[list[tuple[str, int]]]:
    """Per package, its changelog items starting with fix (label 0) or add (1), the verb removed."""
    by_package: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(p for pattern in CHANGELOG_FILES for p in glob.glob(pattern)):
        with gzip.open(path, "rt", errors="replace") as f:
            text = f.read()
        for item in re.split(r"\n\s*[*+-] ", "\n" + text)[1:]:
            words = " ".join(item.split("\n\n")[0].split()).split()
            verb = words[0].lower().strip(":,") if words else ""
            if 5 <= len(words) <= 40 and verb in FIX | ADD:
                by_package.setdefault(path.split("/")[4], []).append((" ".join(words[1:]), int(verb in ADD)))
    if not by_package:
        raise ValueError(f"No changelog items found in {' or '.join(CHANGELOG_FILES)}.")
    return list(by_package.values())


def balanced_splits(files_by_label: list[list[list[str]]], seed: int = 0) -> dict[str, tuple[list[str], np.ndarray]]:
    """`train` and `test` splits, balanced, split by file (every fourth file to test), no sentence twice."""
    rng, seen, splits = random.Random(seed), set(), {}
    pools = {"train": [[], []], "test": [[], []]}
    for label, files in enumerate(files_by_label):
        for i, sentences in enumerate(files):
            for sentence in sentences:
                if _key(sentence) not in seen:
                    seen.add(_key(sentence))
                    pools["test" if i % 4 == 0 else "train"][label].append(sentence)
    for split, size in (("train", FLAGS.train_examples), ("test", FLAGS.test_examples)):
        texts, labels = [], []
        for label, pool in enumerate(pools[split]):
            if len(pool) < size // 2:
                raise ValueError(f"Only {len(pool)} {split} sentences of class {label}, fewer than {size // 2}.")
            texts += rng.sample(pool, size // 2)
            labels += [label] * (size // 2)
        order = rng.sample(range(len(texts)), len(texts))
        splits[split] = [texts[i] for i in order], np.array([labels[i] for i in order])
    return splits


def build_task(name: str) -> dict:
    """`changelog_fix_or_add`, or `A_or_B`: which of two installed packages outside the corpus a docstring
    sentence comes from."""
    if name == "changelog_fix_or_add":
        packages = changelog_files()
        return balanced_splits([[[s for s, y in items if y == label] for items in packages] for label in (0, 1)])
    packages = name.split("_or_")
    if len(packages) != 2 or not all(packages):
        raise ValueError(f"Unknown task {name!r} in --tasks: changelog_fix_or_add, or PACKAGE_or_PACKAGE of two "
                         "installed packages outside the corpus (e.g. torch_or_transformers).")
    for package in packages:
        if package in builtin_corpus_modules(DEPENDENCY_PACKAGES):
            raise ValueError(f"--tasks={name}: {package} is in the pre-training corpus; pick packages outside it.")
        if package not in builtin_corpus_modules((package,)):
            raise ValueError(f"--tasks={name}: {package} is not installed as a package folder with Python sources.")
    corpus = {_key(s) for document in builtin_documents(packages=DEPENDENCY_PACKAGES) for s in document}
    return balanced_splits([package_files(package, corpus) for package in packages])


def classifier(side: str, seed: int) -> BertClassifier:
    """The checkpoint's classifier ("pretrained", with --reinitialize's layers taken from a random-init
    twin) or its random-init twin ("random_init"), seeded by `seed`."""
    keras.utils.set_random_seed(seed)
    pooling = check_pooling(FLAGS.pooling)
    model = BertClassifier.from_checkpoint(FLAGS.checkpoint, num_classes=2, seq_length=FLAGS.seq_length, pooling=pooling)
    if side == "random_init":
        return BertClassifier(BertEncoder(model.encoder.config), 2, preprocessor=model.preprocessor, pooling=pooling)
    if FLAGS.reinitialize:
        twin = BertEncoder(model.encoder.config)
        for name in FLAGS.reinitialize:
            model.encoder.get_layer(name).set_weights(twin.get_layer(name).get_weights())
    return model


class LayerwiseRateAdamW(keras.optimizers.AdamW):
    """Keras' AdamW with each variable's Adam step scaled by `rate_scales[variable.path]` (a variable
    not named there: 1); the small decoupled weight decay stays at the one rate."""

    def __init__(self, rate_scales: dict[str, float], **kwargs):
        super().__init__(**kwargs)
        self.rate_scales = rate_scales

    def build(self, var_list):
        super().build(var_list)
        self._scales = [self.rate_scales.get(v.path, 1.0) for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        scale = self._scales[self._get_variable_index(variable)]
        super().update_step(gradient, variable, learning_rate * scale)


def layerwise_optimizer(model: BertClassifier, learning_rate: float, decay: float) -> keras.optimizers.Optimizer:
    """`default_optimizer(learning_rate)` with `--layer_rate_decay`'s per-layer rates on `model`."""
    num_layers, scales = model.encoder.config.num_hidden_layers, {}
    for variable in model.trainable_variables:
        top = variable.path.split("/")[0]
        if top == "embeddings":
            scales[variable.path] = decay**num_layers
        elif top.startswith("transformer_layer_"):
            scales[variable.path] = decay ** (num_layers - 1 - int(top.rsplit("_", 1)[1]))
    default = default_optimizer(learning_rate)
    optimizer = LayerwiseRateAdamW(scales, **default.get_config())
    optimizer.exclude_from_weight_decay(var_names=list(DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY))
    return optimizer


def fine_tuned_accuracy(task: dict, side: str, learning_rate: float, seed: int) -> float:
    model = classifier(side, seed)
    if FLAGS.layer_rate_decay == 1:
        model.compile(learning_rate=learning_rate)
    else:
        model.compile(optimizer=layerwise_optimizer(model, learning_rate, FLAGS.layer_rate_decay))
    model.fit(*task["train"], epochs=FLAGS.epochs, batch_size=32, verbose=0)
    texts, labels = task["test"]
    return float(np.mean(np.argmax(model.predict(texts, batch_size=256, verbose=0), -1) == labels))


def main(argv):
    del argv
    rates, seeds = [float(r) for r in FLAGS.learning_rates], [int(s) for s in FLAGS.seeds]
    tasks = {name: build_task(name) for name in FLAGS.tasks}  # every task checked before any training
    started = time.perf_counter()
    for name, task in tasks.items():
        result = {"task": name, "checkpoint": FLAGS.checkpoint, **task_accuracies(task, rates, seeds, FLAGS.sides)}
        result["seconds"] = round(time.perf_counter() - started)
        print(json.dumps(result), flush=True)


def task_accuracies(task: dict, rates: list[float], seeds: list[int], sides: list[str]) -> dict:
    """Each side's test accuracy at each rate (the mean over `seeds`) and, with both sides, the gain in
    points at each side's best rate."""
    result = {"seeds": seeds, "learning_rates": rates}
    for side in sides:
        result[side] = [round(float(np.mean([fine_tuned_accuracy(task, side, rate, seed) for seed in seeds])), 4)
                        for rate in rates]
    if "pretrained" in result and "random_init" in result:
        result["gain_points"] = round(100 * (max(result["pretrained"]) - max(result["random_init"])), 1)
    return result


def _key(sentence: str) -> str:
    return " ".join(sentence.lower().split())


if __name__ == "__main__":
    app.run(main)
