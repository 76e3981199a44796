"""Continued pre-training on a new domain: held-out masked-LM accuracy before and after `fit`.

Loads a checkpoint as a `BertMaskedLM` (the main job's `output/pretrain` by default), takes
sentences of a domain its corpus does not hold (the docstrings of an installed package that is
not in the built-in corpus, PyTorch by default, with every sentence the main job's corpus also
holds removed), fits the masked LM on `--train_lines` of them for `--epochs` epochs and
evaluates masked accuracy on `--heldout_lines` others (from other source files) before and after,
with the same masks both times.

Usage:

    python benchmarks/masked_lm_domain.py                                    # output/pretrain
    python benchmarks/masked_lm_domain.py --checkpoint=path/to/all-MiniLM-L6-v2 --seq_length=64
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import json  # noqa: E402
import time  # noqa: E402

import keras  # noqa: E402
from absl import app, flags  # noqa: E402

from keras_bert_lite.data import builtin_documents  # noqa: E402
from keras_bert_lite.data.corpora import DEPENDENCY_PACKAGES, deduplicate_sentences  # noqa: E402
from keras_bert_lite.models import BertMaskedLM  # noqa: E402
from keras_bert_lite.models.task_model import default_optimizer  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("checkpoint", "output/pretrain", "Checkpoint folder of any kind `from_checkpoint` takes.")
flags.DEFINE_string("domain_package", "torch", "Installed package whose docstrings are the new domain.")
flags.DEFINE_integer("train_lines", 5000, "Domain sentences to fit on.")
flags.DEFINE_integer("heldout_lines", 1000, "Domain sentences to evaluate on (from other source files).")
flags.DEFINE_integer("epochs", 2, "Epochs of fit.")
flags.DEFINE_integer("batch_size", 32, "Batch size.")
flags.DEFINE_integer("seq_length", 32, "Tokens per line (the main job trains 32).")
flags.DEFINE_integer("max_predictions_per_seq", 5, "Masked tokens per line (the main job's 5 at 32 tokens).")
flags.DEFINE_float("learning_rate", 0.0, "AdamW's constant rate; 0: the default compile's.")
flags.DEFINE_integer("seed", 1, "Seed of the weights' new parts and the training masks and order.")


def domain_lines(package: str, train_lines: int, heldout_lines: int) -> tuple[list[str], list[str]]:
    """(train, held-out) sentences of `package`'s docstrings that the main job's corpus lacks;
    held-out sentences come from source files after the training ones."""
    corpus = builtin_documents(packages=DEPENDENCY_PACKAGES)
    documents = builtin_documents(packages=(package,))[len(builtin_documents()):]  # the package's own
    if not documents:
        raise ValueError(f"No docstrings found for --domain_package={package}: is it installed?")
    new = deduplicate_sentences([*corpus, *documents], min_sentences=1)[len(corpus):]
    sentences = [s for document in new for s in document]
    if len(sentences) < train_lines + heldout_lines:
        raise ValueError(f"{package} has {len(sentences)} new sentences, fewer than {train_lines + heldout_lines}.")
    return sentences[:train_lines], sentences[-heldout_lines:]


def main(argv):
    del argv
    keras.utils.set_random_seed(FLAGS.seed)
    train, heldout = domain_lines(FLAGS.domain_package, FLAGS.train_lines, FLAGS.heldout_lines)
    mlm = BertMaskedLM.from_checkpoint(FLAGS.checkpoint, seq_length=FLAGS.seq_length,
                                       max_predictions_per_seq=FLAGS.max_predictions_per_seq)
    if FLAGS.learning_rate:
        mlm.compile(optimizer=default_optimizer(FLAGS.learning_rate))
    before = mlm.evaluate(heldout, batch_size=FLAGS.batch_size, return_dict=True, verbose=0)
    start = time.perf_counter()
    mlm.fit(train, epochs=FLAGS.epochs, batch_size=FLAGS.batch_size)
    seconds = time.perf_counter() - start
    after = mlm.evaluate(heldout, batch_size=FLAGS.batch_size, return_dict=True, verbose=0)
    print(json.dumps({
        "checkpoint": FLAGS.checkpoint, "domain": FLAGS.domain_package, "train_lines": len(train),
        "heldout_lines": len(heldout), "epochs": FLAGS.epochs, "learning_rate": float(mlm.optimizer.learning_rate), "fit_seconds": round(seconds, 1),
        "accuracy_before": round(before["accuracy"], 4), "accuracy_after": round(after["accuracy"], 4),
        "loss_before": round(before["loss"], 4), "loss_after": round(after["loss"], 4),
    }))


if __name__ == "__main__":
    app.run(main)
