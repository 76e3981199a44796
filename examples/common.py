"""Pieces shared by the fine-tuning example scripts: flags, model loading, per-epoch evaluation."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable

import keras
from absl import app, flags, logging

from keras_bert_lite.checkpoints import from_google_checkpoint, from_hf_checkpoint
from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.text.preprocessor import BertPreprocessor
from keras_bert_lite.training.optimization import create_optimizer

FLAGS = flags.FLAGS


def define_model_flags(max_seq_length: int) -> None:
    """Flags naming the pre-trained encoder and its preprocessing (see `load_encoder`)."""
    flags.DEFINE_string(
        "init_checkpoint", None,
        "Pre-trained weights: a .keras file (BertEncoder or a model holding one), a Google release "
        "folder (bert_config.json, vocab.txt, bert_model.ckpt.*) or a Hugging Face folder (config.json, "
        "model.safetensors, vocab.txt). Without it the encoder starts from random weights.",
    )
    flags.DEFINE_string("vocab_file", None, "vocab.txt; taken from the checkpoint folder when there is one.")
    flags.DEFINE_string("bert_config_file", None, "bert_config.json for a randomly initialised encoder.")
    flags.DEFINE_string("preset", "base", "BertConfig preset for a randomly initialised encoder.")
    flags.DEFINE_bool("do_lower_case", True, "Uncased vocabulary (lower-case and strip accents).")
    flags.DEFINE_integer("max_seq_length", max_seq_length, "Tokens per packed input.")


def define_flags(max_seq_length: int, learning_rate: float) -> None:
    """Flags every fine-tuning script takes (paper defaults: batch 32, 3 epochs)."""
    define_model_flags(max_seq_length)
    flags.DEFINE_integer("train_batch_size", 32, "Training batch size.")
    flags.DEFINE_integer("eval_batch_size", 32, "Evaluation batch size.")
    flags.DEFINE_float("learning_rate", learning_rate, "Peak learning rate of AdamW.")
    flags.DEFINE_integer("num_train_epochs", 3, "Training epochs.")
    flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warmup.")
    flags.DEFINE_string("output_dir", None, "Where the best model, metrics and predictions go.")
    flags.DEFINE_string("export_dir", None, "Also export the best model as a raw-text SavedModel here.")
    flags.DEFINE_enum("on_error", "raise", ["raise", "skip"], "Bad input records: stop, or skip them.")
    flags.DEFINE_integer("seed", 42, "Random seed.")
    flags.DEFINE_bool("jit_compile", True, "Compile the training and prediction steps with XLA.")
    flags.DEFINE_bool("run_eagerly", False, "Run training and prediction eagerly (debugging, tiny runs).")
    flags.mark_flag_as_required("output_dir")


def load_encoder() -> tuple[BertEncoder, BertPreprocessor]:
    """The encoder named by --init_checkpoint (or a random one) and its preprocessor."""
    path, seq_length = FLAGS.init_checkpoint, FLAGS.max_seq_length
    if path and os.path.isdir(path):
        # Checkpoint folders tell whether they are cased unless the flag is given.
        lower_case = FLAGS.do_lower_case if FLAGS["do_lower_case"].present else None
        if os.path.isfile(os.path.join(path, "config.json")):
            logging.info("Loading Hugging Face weights from %s", path)
            return from_hf_checkpoint(path, seq_length=seq_length, lower_case=lower_case)
        if os.path.isfile(os.path.join(path, "bert_config.json")):
            logging.info("Loading the Google checkpoint in %s", path)
            return from_google_checkpoint(path, seq_length=seq_length, lower_case=lower_case)
        raise ValueError(f"--init_checkpoint {path}: a folder without config.json or bert_config.json.")
    if not FLAGS.vocab_file:
        raise ValueError("--vocab_file is required unless --init_checkpoint is a checkpoint folder.")
    preprocessor = BertPreprocessor(FLAGS.vocab_file, seq_length=seq_length, lower_case=FLAGS.do_lower_case)
    if path:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--init_checkpoint {path} does not exist.")
        logging.info("Loading the .keras model %s", path)
        model = keras.models.load_model(path)
        encoder = model if isinstance(model, BertEncoder) else getattr(model, "encoder", None)
        if not isinstance(encoder, BertEncoder):
            raise ValueError(f"--init_checkpoint {path} holds a {type(model).__name__}, not a BertEncoder.")
        return encoder, preprocessor
    if FLAGS.bert_config_file:
        config = BertConfig.from_json_file(FLAGS.bert_config_file)
    else:
        config = BertConfig.preset(FLAGS.preset, vocab_size=preprocessor.tokenizer.vocab_size)
    logging.info("No --init_checkpoint: the encoder starts from random weights.")
    return BertEncoder(config), preprocessor


def compile_options() -> dict:
    """`model.compile` arguments chosen by --jit_compile and --run_eagerly."""
    return {"jit_compile": FLAGS.jit_compile and not FLAGS.run_eagerly, "run_eagerly": FLAGS.run_eagerly}


def optimizer_for(num_examples: int) -> keras.optimizers.Optimizer:
    """BERT's AdamW with warmup and linear decay over the whole run."""
    steps_per_epoch = max(1, math.ceil(num_examples / FLAGS.train_batch_size))
    num_train_steps = steps_per_epoch * FLAGS.num_train_epochs
    return create_optimizer(
        FLAGS.learning_rate, num_train_steps, int(num_train_steps * FLAGS.warmup_proportion)
    )


class KeepBest(keras.callbacks.Callback):
    """Evaluates after every epoch and saves the model when the main metric improves.

    Args:
        evaluate: returns a dict of metrics for the current weights.
        metric: the key of `evaluate()`'s result to maximise.
        path: where the best model is saved (`.keras`).
    """

    def __init__(self, evaluate: Callable[[], dict], metric: str, path: str):
        super().__init__()
        self.evaluate, self.metric, self.path = evaluate, metric, path
        self.best: float | None = None
        self.history: list[dict] = []

    def on_epoch_end(self, epoch, logs=None):
        metrics = self.evaluate()
        self.history.append({"epoch": epoch + 1, **metrics})
        logging.info("Epoch %d evaluation: %s", epoch + 1, metrics)
        if logs is not None:
            logs.update({f"dev_{k}": v for k, v in metrics.items() if isinstance(v, (int, float))})
        if self.best is None or metrics[self.metric] > self.best:
            self.best = metrics[self.metric]
            self.model.save(self.path)
            logging.info("New best %s = %.4f; saved %s", self.metric, self.best, self.path)


def write_json(path: str, value) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")
    logging.info("Wrote %s", path)


def run(main: Callable) -> None:
    """`app.run(main)`, turning bad input (ValueError, FileNotFoundError) into one error line."""

    def guarded(argv):
        try:
            main(argv)
        except (ValueError, FileNotFoundError) as e:
            raise SystemExit(f"Error: {e}") from None

    app.run(guarded)
