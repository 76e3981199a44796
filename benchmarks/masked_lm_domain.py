"""Continued pre-training on a new domain: held-out masked-LM accuracy before and after `fit`.

Loads a checkpoint as a `BertMaskedLM` with its defaults (the main job's `output/pretrain` by
default), takes sentences of a domain its corpus does not hold, fits the masked LM on
`--train_lines` of them for `--epochs` epochs with the default `compile` and `fit` arguments, and
evaluates masked accuracy on `--heldout_lines` others (the domain's last sentences, from other
files) before and after, with the same masks both times. What it runs is what a user types:

    mlm = kbl.BertMaskedLM.from_checkpoint(checkpoint)
    before = mlm.evaluate(heldout, return_dict=True)
    mlm.fit(train, epochs=2)
    after = mlm.evaluate(heldout, return_dict=True)

Domains: `--domain_package`, the docstrings of an installed package the built-in corpus does not
contain (PyTorch by default: near the corpus's TensorFlow and Keras docstrings), every sentence
the corpus also holds removed; or `--domain_files`, the prose of plain-text files, e.g. Vim's help
files (an editor's manual: far from Python docstrings), read in Vim's help format (paragraphs of
unindented lines; indented examples, `*tag*` and `===` lines dropped, `|links|` unwrapped).

Usage:

    python benchmarks/masked_lm_domain.py --checkpoint=output/pretrain                  # PyTorch
    python benchmarks/masked_lm_domain.py --checkpoint=output/pretrain \\
        --domain_files='/usr/share/vim/vim90/doc/*.txt'                                 # Vim's help
    python benchmarks/masked_lm_domain.py --learning_rate=5e-4                          # another rate
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import json  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

import keras  # noqa: E402
from absl import app, flags  # noqa: E402

from keras_bert_lite.data import builtin_documents  # noqa: E402
from keras_bert_lite.data.corpora import DEPENDENCY_PACKAGES, deduplicate_sentences, expand_file_patterns  # noqa: E402
from keras_bert_lite.data.sentences import split_sentences  # noqa: E402
from keras_bert_lite.models import BertMaskedLM  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("checkpoint", "output/pretrain", "Checkpoint folder of any kind `from_checkpoint` takes.")
flags.DEFINE_string("domain_package", "torch", "Installed package whose docstrings are the new domain.")
flags.DEFINE_string("domain_files", None, "Comma-separated glob patterns of plain-text files (Vim's help "
                    "format) whose prose is the new domain, instead of --domain_package.")
flags.DEFINE_string("skip_files", r"/(version\d+|todo)\.txt$", "Regex of --domain_files paths to leave out "
                    "(by default Vim's release notes, lists of patches rather than prose).")
flags.DEFINE_integer("train_lines", 5000, "Domain sentences to fit on.")
flags.DEFINE_integer("heldout_lines", 1000, "Domain sentences to evaluate on (the last ones, from other files).")
flags.DEFINE_integer("epochs", 2, "Epochs of fit.")
flags.DEFINE_integer("batch_size", None, "Batch size of fit (default: fit's, 32).")
flags.DEFINE_integer("seq_length", None, "Tokens per line (default: from_checkpoint's, 128).")
flags.DEFINE_integer("max_predictions_per_seq", None, "Masked tokens per line at most (default: the model's, 20).")
flags.DEFINE_float("learning_rate", None, "compile(learning_rate=...) (default: the model's default compile, 1e-4).")
flags.DEFINE_list("seeds", ["1", "2"], "Seeds of the training masks and order: one fit of a fresh model each.")


def package_lines(package: str) -> list[str]:
    """Sentences of `package`'s docstrings that the main job's corpus lacks, in source-file order."""
    corpus = builtin_documents(packages=DEPENDENCY_PACKAGES)
    documents = builtin_documents(packages=(package,))[len(builtin_documents()):]  # the package's own
    if not documents:
        raise ValueError(f"No docstrings found for --domain_package={package}: is it installed?")
    new = deduplicate_sentences([*corpus, *documents], min_sentences=1)[len(corpus):]
    return [s for document in new for s in document]


def help_file_lines(patterns: str, skip: str) -> list[str]:
    """Sentences (3 words or more) of the prose paragraphs of Vim-help-format text files, in file order."""
    sentences = []
    for path in expand_file_patterns(patterns):
        if skip and re.search(skip, path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            paragraphs = re.split(r"\n\s*\n", f.read())
        for paragraph in paragraphs:
            lines = [line for line in paragraph.split("\n") if line.strip()]
            if not lines or any(line[:1].isspace() or line.startswith(("=", "*", "|")) for line in lines):
                continue  # examples and tables are indented; headings start with tags or rules
            text = re.sub(r"\|([^|\s]+)\|", r"\1", " ".join(line.strip() for line in lines).rstrip(">"))
            sentences += [s for s in split_sentences(text) if len(s.split()) >= 3]
    return sentences


def main(argv):
    del argv
    if FLAGS.domain_files:
        domain, sentences = FLAGS.domain_files, help_file_lines(FLAGS.domain_files, FLAGS.skip_files)
    else:
        domain, sentences = FLAGS.domain_package, package_lines(FLAGS.domain_package)
    if len(sentences) < FLAGS.train_lines + FLAGS.heldout_lines:
        raise ValueError(f"{domain} has {len(sentences)} sentences, fewer than --train_lines + --heldout_lines.")
    train, heldout = sentences[: FLAGS.train_lines], sentences[-FLAGS.heldout_lines :]
    options = {name: getattr(FLAGS, name) for name in ("seq_length", "max_predictions_per_seq")
               if getattr(FLAGS, name) is not None}
    for seed in FLAGS.seeds:
        keras.utils.set_random_seed(int(seed))
        print(json.dumps({"seed": int(seed), **continued_pretraining(domain, train, heldout, options)}), flush=True)


def continued_pretraining(domain: str, train: list[str], heldout: list[str], options: dict) -> dict:
    """Held-out masked accuracy and loss of the checkpoint before and after fitting on `train`."""
    mlm = BertMaskedLM.from_checkpoint(FLAGS.checkpoint, **options)
    if FLAGS.learning_rate:
        mlm.compile(learning_rate=FLAGS.learning_rate)
    before = mlm.evaluate(heldout, return_dict=True, verbose=0)
    start = time.perf_counter()
    fit_options = {"batch_size": FLAGS.batch_size} if FLAGS.batch_size else {}
    mlm.fit(train, epochs=FLAGS.epochs, verbose=0, **fit_options)
    seconds = time.perf_counter() - start
    after = mlm.evaluate(heldout, return_dict=True, verbose=0)
    return {
        "checkpoint": FLAGS.checkpoint, "domain": domain, "train_lines": len(train), "heldout_lines": len(heldout),
        "epochs": FLAGS.epochs, "seq_length": mlm.preprocessor.seq_length,
        "max_predictions_per_seq": mlm.max_predictions_per_seq,
        "learning_rate": float(mlm.optimizer.learning_rate), "fit_seconds": round(seconds, 1),
        "accuracy_before": round(before["accuracy"], 4), "accuracy_after": round(after["accuracy"], 4),
        "gain_points": round(100 * (after["accuracy"] - before["accuracy"]), 1),
        "loss_before": round(before["loss"], 4), "loss_after": round(after["loss"], 4),
    }


if __name__ == "__main__":
    app.run(main)
