"""Learns a BERT WordPiece vocabulary (`vocab.txt`) from your text files.

Usage:

    python tpu/build_vocab.py --input_file='corpus/*.txt' --output_file=vocab.txt --vocab_size=30522

Every non-blank line of the UTF-8 files (one sentence or text per line, as in Google's
pre-training format) is text to learn from; the text is normalised as `BertTokenizer` does
(`--do_lower_case` for an uncased vocabulary) and the words go to tensorflow-text's WordPiece
learner (`keras_bert_lite.build_vocab`). The result feeds `create_pretraining_data.py
--vocab_file` and every tokenizer here. Progress is logged per file read; bad input (no file
matching a pattern, text that is not UTF-8, an output path that is a folder) is one line
`build_vocab.py: error: ...` (exit code 1) before anything is written.
"""

from __future__ import annotations

import script_runner  # first: it sets what TensorFlow reads when it loads  # isort: skip

import os

import tensorflow as tf
from absl import flags, logging

from keras_bert_lite.data.corpora import expand_file_patterns, read_documents
from keras_bert_lite.text.vocab import build_vocab

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Input text file(s): comma-separated list of files or globs.")
flags.DEFINE_string("output_file", "vocab.txt", "Where to write the vocabulary, one token per line.")
flags.DEFINE_integer("vocab_size", 30522, "Largest vocabulary size (BERT's English vocabularies: 30522); the "
                     "learner aims for 95-100 % of it, and a small corpus yields fewer (logged as a warning).")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (an uncased vocabulary).")
flags.DEFINE_integer("max_lines", 0, "Learn from the first N lines only (0: all).")
flags.mark_flags_as_required(["input_file"])


def read_lines() -> list[str]:
    """The non-blank lines of --input_file's files, logging each file read."""
    lines: list[str] = []
    for path in expand_file_patterns(FLAGS.input_file):  # FileNotFoundError naming a pattern matching nothing
        if tf.io.gfile.isdir(path):
            raise ValueError(f"--input_file: {path} is a folder, expected text files.")
        read = [line for document in read_documents(path) for line in document]
        lines += read
        logging.info("Read %d lines from %s (%d in all).", len(read), path, len(lines))
        if 0 < FLAGS.max_lines <= len(lines):
            return lines[: FLAGS.max_lines]
    return lines


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])} (flags are --name=value).")
    if tf.io.gfile.isdir(FLAGS.output_file):
        raise ValueError(f"--output_file: {FLAGS.output_file} is an existing folder, expected a file path.")
    if FLAGS.vocab_size < 1 or FLAGS.max_lines < 0:
        raise ValueError("--vocab_size must be positive and --max_lines at least 0.")
    lines = read_lines()
    logging.info("Learning a vocabulary of up to %d tokens from %d lines ...", FLAGS.vocab_size, len(lines))
    folder = os.path.dirname(FLAGS.output_file)
    if folder:
        tf.io.gfile.makedirs(folder)
    vocab = build_vocab(lines, FLAGS.vocab_size, FLAGS.do_lower_case, output_file=FLAGS.output_file)
    logging.info("Wrote %d tokens to %s.", len(vocab), FLAGS.output_file)


def run(argv: list[str] | None = None) -> None:
    """Parses the flags of `argv` (default: `sys.argv`) and runs `main`; bad input ends the process
    with one line `build_vocab.py: error: ...` and exit code 1 (`script_runner.run`)."""
    script_runner.run(main, argv)


if __name__ == "__main__":
    run()
