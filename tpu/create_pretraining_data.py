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
"""

from __future__ import annotations

import importlib
import sys

importlib.import_module("keras_bert_lite.tf_startup")  # before TensorFlow: no GPU probe without an NVIDIA driver

import tensorflow as tf  # noqa: E402
from absl import app, flags, logging  # noqa: E402

from keras_bert_lite.data.corpora import builtin_documents, read_documents, tfds_documents  # noqa: E402
from keras_bert_lite.data.pretraining.writer import check_output_files, create_pretraining_data  # noqa: E402
from keras_bert_lite.text.tokenizer import load_vocabulary  # noqa: E402

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
    sources = [bool(FLAGS.input_file), FLAGS.builtin_corpus, bool(FLAGS.tfds_name)]
    if sum(sources) != 1:
        raise ValueError("Give exactly one corpus: --input_file, --builtin_corpus or --tfds_name.")
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


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    try:
        check_vocab_file(FLAGS.vocab_file)
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
    except (ValueError, FileNotFoundError, KeyError, RuntimeError) as e:
        sys.exit(f"create_pretraining_data: error: {e}")
    logging.info(
        "Wrote %d examples (%d random next, %d masked) to %d file(s); documents: %d used, %d skipped.",
        stats.examples,
        stats.random_next_examples,
        stats.masked_lm_predictions,
        len(stats.output_files),
        stats.documents,
        stats.documents_skipped,
    )


if __name__ == "__main__":
    flags.mark_flags_as_required(["output_file", "vocab_file"])
    app.run(main)
