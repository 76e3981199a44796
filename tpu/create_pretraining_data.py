"""Creates BERT pre-training TFRecords (masked LM + next sentence prediction).

Flags with the names of Google's original `create_pretraining_data.py` mean the same thing, and
the output has exactly its TFRecord format, so the files feed both `run_pretraining.py` and
`keras_bert_lite.pretraining_dataset`. The corpus comes from text files in Google's format (one
sentence per line, blank lines between documents), from the built-in standard-library
documentation corpus, or from a TensorFlow Datasets text dataset.

Usage:

    python tpu/create_pretraining_data.py --input_file='corpus/*.txt' \\
        --output_file=data/train.tfrecord --num_shards=4 --vocab_file=vocab.txt \\
        --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5

    python tpu/create_pretraining_data.py --builtin_corpus --output_file=data/docs.tfrecord \\
        --vocab_file=vocab.txt --max_documents=50

The first writes `data/train.tfrecord-00000-of-00004` ... `-00003-of-00004` (read them back with
`--input_files='data/train.tfrecord-*'`), the second `data/docs.tfrecord`. Every flag and input is
checked before the corpus is read and anything is written: bad input is one line
`create_pretraining_data.py: error: ...` (exit code 1), and a run that fails leaves no file or
folder behind.
"""

from __future__ import annotations

import script_runner  # first: it sets what TensorFlow reads when it loads  # isort: skip

import os

import tensorflow as tf
from absl import flags, logging

from keras_bert_lite.data import builtin_documents, create_pretraining_data, read_documents, tfds_documents
from keras_bert_lite.data.corpora import expand_file_patterns
from keras_bert_lite.data.pretraining.writer import check_output_files
from keras_bert_lite.text.tokenizer import load_vocabulary

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Input text file(s): comma-separated list of files or globs.")
flags.DEFINE_string(
    "output_file", None, "Output TFRecord file, or a comma-separated list (examples go round-robin)."
)
flags.DEFINE_string("vocab_file", None, "The WordPiece vocab.txt the BERT model is trained with.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (True for uncased models).")
flags.DEFINE_bool("do_whole_word_mask", False, "Mask whole words (all their WordPieces) at once.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length, including [CLS] and [SEP]s.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10, "Number of passes over the input, each with different masks.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of targeting a sequence shorter than the maximum.")
flags.DEFINE_bool("builtin_corpus", False, "Use the built-in Python standard-library documentation corpus.")
flags.DEFINE_string("tfds_name", None, "Use this TensorFlow Datasets text dataset (each example a document).")
flags.DEFINE_string("tfds_split", "train", "TFDS split to read with --tfds_name.")
flags.DEFINE_string("tfds_text_key", "text", "TFDS feature holding the text with --tfds_name.")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory with --tfds_name.")
flags.DEFINE_integer(
    "num_shards", 1, "With a single --output_file, write this many shards named <output_file>-NNNNN-of-NNNNN."
)
flags.DEFINE_integer("max_documents", 0, "Use only the first N documents of the corpus (0: all).")
flags.mark_flags_as_required(["output_file", "vocab_file"])


def output_files(output_file: str, num_shards: int) -> list[str]:
    """The output paths from --output_file and --num_shards, checked to be writable.

    Raises:
        ValueError: the message names the flag at fault.
    """
    paths = [p.strip() for p in output_file.split(",") if p.strip()]
    if num_shards < 1:
        raise ValueError(f"--num_shards must be at least 1, got {num_shards}.")
    if num_shards > 1:
        if len(paths) != 1:
            raise ValueError("--num_shards needs a single --output_file path to derive the shard names from.")
        paths = [f"{paths[0]}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]
    try:
        return check_output_files(paths)
    except ValueError as e:
        raise ValueError(f"--output_file: {e}") from None


def check_vocab_file(path: str) -> None:
    """Reads --vocab_file once, so that a bad one is reported before the corpus is loaded."""
    try:
        if tf.io.gfile.isdir(path):
            raise ValueError(f"{path} is a folder, expected a vocab.txt file")
        load_vocabulary(path)
    except (ValueError, OSError, tf.errors.OpError) as e:
        reason = e.message if isinstance(e, tf.errors.OpError) else str(e)
        raise ValueError(f"--vocab_file: {reason.rstrip('.')}.") from None


def load_corpus() -> list[list[str]]:
    """The documents selected by the corpus flags."""
    if FLAGS.input_file:
        documents = read_documents(FLAGS.input_file)
    elif FLAGS.builtin_corpus:
        documents = builtin_documents()
    else:
        documents = tfds_documents(
            FLAGS.tfds_name, FLAGS.tfds_split, text_key=FLAGS.tfds_text_key, data_dir=FLAGS.tfds_data_dir
        )
    if FLAGS.max_documents > 0:
        documents = documents[: FLAGS.max_documents]
    return documents


def missing_folders(paths: list[str]) -> list[str]:
    """The folders that writing `paths` would create, deepest first."""
    missing = set()
    for path in paths:
        folder = os.path.dirname(path)
        while folder and not tf.io.gfile.exists(folder):
            missing.add(folder)
            folder = os.path.dirname(folder)
    return sorted(missing, key=len, reverse=True)


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])} (flags are --name=value).")
    if [bool(FLAGS.input_file), FLAGS.builtin_corpus, bool(FLAGS.tfds_name)].count(True) != 1:
        raise ValueError("Give exactly one corpus: --input_file, --builtin_corpus or --tfds_name.")
    check_vocab_file(FLAGS.vocab_file)
    # Each pattern must match files (expand_file_patterns names one that matches nothing).
    for path in expand_file_patterns(FLAGS.input_file) if FLAGS.input_file else ():
        if tf.io.gfile.isdir(path):
            raise ValueError(f"--input_file: {path} is a folder, expected text files (one sentence per line).")
    paths = [p.strip() for p in FLAGS.output_file.split(",") if p.strip()]
    created = missing_folders(paths if FLAGS.num_shards == 1 else paths[:1])
    try:
        paths = output_files(FLAGS.output_file, FLAGS.num_shards)
        documents = load_corpus()
        logging.info("Corpus: %d documents, %d sentences.", len(documents), sum(len(d) for d in documents))
        stats = create_pretraining_data(
            documents,
            FLAGS.vocab_file,
            paths,
            lower_case=FLAGS.do_lower_case,
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            masked_lm_prob=FLAGS.masked_lm_prob,
            short_seq_prob=FLAGS.short_seq_prob,
            dupe_factor=FLAGS.dupe_factor,
            whole_word_masking=FLAGS.do_whole_word_mask,
            seed=FLAGS.random_seed,
            progress=True,
        )
    except BaseException:
        for folder in created:  # the output check made them; a failed run leaves none behind
            if tf.io.gfile.isdir(folder) and not tf.io.gfile.listdir(folder):
                tf.io.gfile.rmtree(folder)
        raise
    logging.info(
        "Wrote %d examples (%d random next, %d masked) to %d file(s); documents: %d used, %d skipped.",
        stats.examples,
        stats.random_next_examples,
        stats.masked_lm_predictions,
        len(stats.output_files),
        stats.documents,
        stats.documents_skipped,
    )


def run(argv: list[str] | None = None) -> None:
    """Parses the flags of `argv` (default: `sys.argv`) and runs `main`; bad input ends the process
    with one line `create_pretraining_data.py: error: ...` and exit code 1 (`script_runner.run`)."""
    script_runner.run(main, argv)


if __name__ == "__main__":
    run()
