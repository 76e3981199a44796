"""Pieces shared by the fine-tuning example scripts: start-up, flags, model loading, the training run.

Import this module before TensorFlow (it is the scripts' first third-party import): it sets the
environment variables TensorFlow reads once, when it is loaded. Scripts call
`flags.adopt_module_key_flags(common)` so that `--help` lists these flags with their own, and
`run` (every script's runner, tpu/script_runner.py) as their entry point.
"""

from __future__ import annotations

import importlib
import os
import sys

_TPU_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tpu")


def _set_tensorflow_environment() -> None:
    """The start-up of every script (`script_runner.set_tensorflow_environment`), showing TensorFlow's
    C++ warnings and errors (level 1: only its INFO lines, about its own start-up, are off)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    if _TPU_DIR not in sys.path:
        sys.path.append(_TPU_DIR)
    importlib.import_module("script_runner").set_tensorflow_environment()


_set_tensorflow_environment()

import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
from collections.abc import Callable  # noqa: E402

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import flags, logging  # noqa: E402
from script_runner import run  # noqa: E402, F401 - the scripts' entry: `run(main, argv)`

from keras_bert_lite.atomic import write_text_atomically  # noqa: E402
from keras_bert_lite.config import BertConfig  # noqa: E402
from keras_bert_lite.models.checkpoint_folder import from_checkpoint  # noqa: E402
from keras_bert_lite.models.encoder import BertEncoder  # noqa: E402
from keras_bert_lite.models.rebuild import save_model  # noqa: E402
from keras_bert_lite.optimization import create_optimizer  # noqa: E402
from keras_bert_lite.text.preprocessor import BertPreprocessor  # noqa: E402
from keras_bert_lite.training.run_checkpoints import TrainingCheckpoints  # noqa: E402

# TensorFlow's own Python logger narrates SavedModel writing at INFO ("Assets written to", each line
# twice: through its handler and absl's, which shows INFO in these scripts); its warnings and
# errors still show.
tf.get_logger().setLevel("WARNING")

FLAGS = flags.FLAGS
BACKUP_SUBDIR = "backup"
LOGS_SUBDIR = "logs"
BEST_MODEL_NAME = "best_model.keras"
EVAL_HISTORY_NAME = "eval_history.json"
# Marks a tf.summary value as a scalar for TensorBoard (what tf.summary.scalar adds, without
# needing the tensorboard package at training time).
_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars")
)


def define_model_flags(max_seq_length: int) -> None:
    """Flags naming the pre-trained encoder and its preprocessing (see `load_encoder`)."""
    flags.DEFINE_string(
        "init_checkpoint", None,
        "Pre-trained weights: a folder of ours (encoder.keras, vocab.txt), a .keras file (a BertEncoder or a "
        "model holding one, vocab.txt beside it), a Google release folder or its bert_model.ckpt prefix, or a "
        "Hugging Face folder (config.json, model.safetensors, vocab.txt). Without it the encoder starts from "
        "random weights.",
    )
    flags.DEFINE_string("vocab_file", None, "vocab.txt, when it is not beside --init_checkpoint's weights.")
    flags.DEFINE_string("bert_config_file", None,
                        "bert_config.json of a randomly initialised encoder (a checkpoint brings its own).")
    flags.DEFINE_string("preset", "base", "BertConfig preset for a randomly initialised encoder.")
    flags.DEFINE_bool("do_lower_case", True,
                      "Lower-case and strip accents. Read from --init_checkpoint (its tokenizer_config.json or "
                      "its vocabulary) unless given.")
    flags.DEFINE_integer("max_seq_length", max_seq_length, "Tokens per packed input.")


def define_flags(max_seq_length: int, learning_rate: float) -> None:
    """Flags every fine-tuning script takes (paper defaults: batch 32, 3 epochs)."""
    define_model_flags(max_seq_length)
    flags.DEFINE_integer("train_batch_size", 32, "Training batch size.")
    flags.DEFINE_integer("eval_batch_size", 32, "Evaluation batch size.")
    flags.DEFINE_float("learning_rate", learning_rate, "Peak learning rate of AdamW.")
    flags.DEFINE_integer("num_train_epochs", 3, "Training epochs.")
    flags.DEFINE_integer("max_steps", None, "Stop after this many training steps (e.g. a smoke run); the learning "
                         "rate schedule spans them. The dev set is still evaluated at the end.", lower_bound=1)
    flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warmup.")
    flags.DEFINE_string("output_dir", None, "Where the best model, metrics, predictions, TensorBoard logs (logs/) "
                        "and the backup that a rerun resumes from (backup/) go.")
    flags.DEFINE_string("export_dir", None, "Also export the best model as a raw-text SavedModel here.")
    flags.DEFINE_integer("save_checkpoints_steps", 1000, "Back up the training state every this many steps (and "
                         "after every epoch); rerunning the same command after a kill resumes from it.", lower_bound=1)
    flags.DEFINE_integer("save_summary_steps", 100, "Write training TensorBoard scalars every this many steps.",
                         lower_bound=1)
    flags.DEFINE_enum("on_error", "raise", ["raise", "skip"], "Bad input records: stop, or skip them.")
    flags.DEFINE_integer("seed", 42, "Random seed.")
    flags.DEFINE_bool("jit_compile", True, "Compile the training and prediction steps with XLA.")
    flags.DEFINE_bool("run_eagerly", False, "Run training and prediction eagerly (debugging, tiny runs).")
    flags.mark_flag_as_required("output_dir")


def load_encoder() -> tuple[BertEncoder, BertPreprocessor]:
    """The encoder named by --init_checkpoint (or a random one) and its preprocessor."""
    path, seq_length = FLAGS.init_checkpoint, FLAGS.max_seq_length
    lower_case = FLAGS.do_lower_case if FLAGS["do_lower_case"].present else None
    if path:
        encoder, preprocessor = from_checkpoint(path, seq_length, lower_case, vocab_file=FLAGS.vocab_file)
        if FLAGS.bert_config_file and BertConfig.from_json_file(FLAGS.bert_config_file) != encoder.config:
            raise ValueError(
                f"--bert_config_file {FLAGS.bert_config_file} differs from the config of --init_checkpoint {path}; "
                "leave it out (the checkpoint brings its own)."
            )
        return encoder, preprocessor
    if not FLAGS.vocab_file:
        raise ValueError("--vocab_file is required without --init_checkpoint.")
    preprocessor = BertPreprocessor(FLAGS.vocab_file, seq_length=seq_length, lower_case=FLAGS.do_lower_case)
    if FLAGS.bert_config_file:
        config = BertConfig.from_json_file(FLAGS.bert_config_file)
    else:
        config = BertConfig.preset(FLAGS.preset, vocab_size=preprocessor.tokenizer.vocab_size)
    logging.info("No --init_checkpoint: the encoder starts from random weights.")
    return BertEncoder(config), preprocessor


def compile_options() -> dict:
    """`model.compile` arguments chosen by --jit_compile and --run_eagerly."""
    return {"jit_compile": FLAGS.jit_compile and not FLAGS.run_eagerly, "run_eagerly": FLAGS.run_eagerly}


@dataclasses.dataclass(frozen=True)
class TrainingPlan:
    """How long training runs: `num_epochs` epochs of `steps_per_epoch` steps, or `max_steps` if fewer."""

    steps_per_epoch: int
    num_epochs: int
    max_steps: int | None = None

    @property
    def total_steps(self) -> int:
        total = self.steps_per_epoch * self.num_epochs
        return min(total, self.max_steps or total)

    @classmethod
    def from_flags(cls, steps_per_epoch: int) -> TrainingPlan:
        """--num_train_epochs of `steps_per_epoch`, at most --max_steps."""
        return cls(steps_per_epoch, FLAGS.num_train_epochs, FLAGS.max_steps)


def optimizer_for(num_examples: int) -> keras.optimizers.Optimizer:
    """BERT's AdamW with warmup and linear decay over the whole run (`TrainingPlan.from_flags`)."""
    total_steps = TrainingPlan.from_flags(max(1, math.ceil(num_examples / FLAGS.train_batch_size))).total_steps
    return create_optimizer(FLAGS.learning_rate, total_steps, int(total_steps * FLAGS.warmup_proportion))


class KeepBest(keras.callbacks.Callback):
    """Evaluates after every epoch and saves the model when the main metric improves.

    The metrics join the epoch's logs as `val_<name>` (progress bar, TensorBoard). The model is
    saved without its optimizer (`keras_bert_lite.models.rebuild.save_model`). With
    `history_path`, the evaluations so far are kept there (atomically), so a resumed run knows
    the best score reached before it.

    Args:
        evaluate: returns a dict of metrics for the current weights.
        metric: the key of `evaluate()`'s result to maximise.
        path: where the best model is saved (`.keras`).
        history_path: JSON file of the evaluations so far, read at start when it exists.
    """

    def __init__(self, evaluate: Callable[[], dict], metric: str, path: str, history_path: str | None = None):
        super().__init__()
        self.evaluate, self.metric, self.path, self.history_path = evaluate, metric, path, history_path
        self.history: list[dict] = []
        if history_path and tf.io.gfile.exists(history_path) and tf.io.gfile.exists(path):
            with tf.io.gfile.GFile(history_path) as f:
                self.history = json.load(f)

    @property
    def best(self) -> float | None:
        scores = [entry[self.metric] for entry in self.history]
        return max(scores) if scores else None

    def forget_after(self, epoch: int) -> None:
        """Drops evaluations after `epoch` epochs (they are redone when training resumes earlier)."""
        self.history = [entry for entry in self.history if entry["epoch"] <= epoch]

    def on_epoch_end(self, epoch, logs=None):
        metrics = self.evaluate()
        logging.info("Epoch %d evaluation: %s", epoch + 1, metrics)
        if logs is not None:
            logs.update({f"val_{k}": v for k, v in metrics.items() if isinstance(v, (int, float))})
        self.forget_after(epoch)
        best = self.best
        self.history.append({"epoch": epoch + 1, "step": int(self.model.optimizer.iterations), **metrics})
        if best is None or metrics[self.metric] > best:
            save_model(self.model, self.path)
            logging.info("New best %s = %.4f; saved %s", self.metric, metrics[self.metric], self.path)
        if self.history_path:
            write_text_atomically(self.history_path, json.dumps(self.history, indent=2) + "\n")


class TrainingSummaries(keras.callbacks.Callback):
    """TensorBoard scalars at the optimizer's step, so a resumed run continues the same curves.

    `log_dir/train`: the training logs (Keras' running means over the epoch) and the learning
    rate every `every_steps` steps; `log_dir/eval`: the `val_*` metrics after every epoch.
    """

    def __init__(self, log_dir: str, every_steps: int):
        super().__init__()
        self.every_steps = every_steps
        self.train_writer = tf.summary.create_file_writer(os.path.join(log_dir, "train"))
        self.eval_writer = tf.summary.create_file_writer(os.path.join(log_dir, "eval"))

    def _write(self, writer, values: dict) -> None:
        step = int(self.model.optimizer.iterations)
        with writer.as_default():
            for name, value in values.items():
                tf.summary.write(name, tf.constant(float(value), tf.float32), step=step, metadata=_SCALAR_METADATA)
        writer.flush()

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations) % self.every_steps == 0:
            learning_rate = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
            self._write(self.train_writer, {**(logs or {}), "learning_rate": learning_rate})

    def on_epoch_end(self, epoch, logs=None):
        self._write(self.eval_writer, {k[4:]: v for k, v in (logs or {}).items() if k.startswith("val_")})


class BackupEvery(keras.callbacks.Callback):
    """Saves `checkpoints` every `every_steps` optimizer steps and after every epoch."""

    def __init__(self, checkpoints: TrainingCheckpoints, every_steps: int):
        super().__init__()
        self.checkpoints, self.every_steps, self.last_saved = checkpoints, every_steps, None

    def _save(self):
        step = int(self.model.optimizer.iterations)
        if step != self.last_saved:
            self.checkpoints.save()
            self.last_saved = step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations) % self.every_steps == 0:
            self._save()

    def on_epoch_end(self, epoch, logs=None):
        self._save()


class StopAtStep(keras.callbacks.Callback):
    """Ends `fit` once the optimizer has made `last_step` steps (the epoch still ends and evaluates)."""

    def __init__(self, last_step: int):
        super().__init__()
        self.last_step = last_step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations) >= self.last_step:
            self.model.stop_training = True


def fine_tune(
    model: keras.Model,
    make_train_batches: Callable[[], tf.data.Dataset],
    evaluate: Callable[[], dict],
    metric: str,
    first_batches: tf.data.Dataset | None = None,
) -> KeepBest:
    """`train_and_keep_best` as the flags say: --output_dir, --num_train_epochs, --max_steps, ...
    (`first_batches`, made here if None, also sizes the epochs)."""
    if first_batches is None:
        first_batches = make_train_batches()
    return train_and_keep_best(
        model, make_train_batches, evaluate, metric, FLAGS.output_dir,
        TrainingPlan.from_flags(int(first_batches.cardinality())), FLAGS.save_checkpoints_steps,
        FLAGS.save_summary_steps, first_batches,
    )


def train_and_keep_best(
    model: keras.Model,
    make_train_batches: Callable[[], tf.data.Dataset],
    evaluate: Callable[[], dict],
    metric: str,
    output_dir: str,
    plan: TrainingPlan,
    save_checkpoints_steps: int,
    save_summary_steps: int,
    first_batches: tf.data.Dataset | None = None,
) -> KeepBest:
    """Trains a compiled `model`, evaluating after every epoch and keeping the best one.

    Runs `plan.total_steps` steps (the optimizer's schedule should span the same; see
    `optimizer_for`) with a backup of the model and optimizer in `output_dir/backup` every
    `save_checkpoints_steps` steps and after every epoch. Called again after a kill, it restores
    the backup and continues at the next batch of the same epoch: the batches are read again from
    the start of a new dataset and those already trained on are skipped, which gives the same order
    because its shuffle is seeded and reshuffles on every pass. (A new dataset for each `fit`
    call, because a dataset's later passes continue its shuffle's random sequence: skipping on
    the same one would land on other epochs' orders.) Writes `output_dir/best_model.keras`
    (without optimizer state), `output_dir/eval_history.json` and TensorBoard scalars in
    `output_dir/logs`; deletes the backup once training completes.

    Fine-tuning runs on Keras' `fit`, pre-training on the custom distributed loop of
    `keras_bert_lite.training.run_pretraining` (docs/pretraining.md says why `fit` does not serve
    there); these callbacks stay beside Keras' own, which do other things: `BackupAndRestore` resumes
    at the start of the epoch (not at the next batch), `TensorBoard` counts its steps from 0 again
    in a resumed run, and `ModelCheckpoint(save_best_only=True)` would still need `KeepBest`'s
    evaluation to put the score (SQuAD's F1) in the logs, and saves the optimizer with the model.

    Args:
        model: compiled.
        make_train_batches: returns a new dataset of one epoch of training batches
            (`plan.steps_per_epoch` of them), shuffled with a fixed seed on every pass.
        evaluate: returns the dev metrics (a dict) for the current weights.
        metric: the key of `evaluate()`'s result that selects the best model.
        output_dir: where everything is written.
        plan: how many steps to run.
        save_checkpoints_steps: steps between backups.
        save_summary_steps: steps between training scalars.
        first_batches: a dataset from `make_train_batches` not read yet, for the first `fit` (building
            one traces its tokenization again, which takes seconds); None: a new one.

    Returns:
        The `KeepBest` callback: `history` holds every epoch's evaluation.
    """
    if plan.steps_per_epoch < 1:
        raise ValueError("The training data is empty or of unknown size.")
    model.optimizer.build(model.trainable_variables)  # so that the backup restores its slots too
    backup_dir = os.path.join(output_dir, BACKUP_SUBDIR)
    checkpoints = TrainingCheckpoints(backup_dir, tf.distribute.get_strategy(), model, model.optimizer,
                                      model.optimizer.iterations, max_to_keep=1)
    step = checkpoints.restore()
    keep_best = KeepBest(evaluate, metric, os.path.join(output_dir, BEST_MODEL_NAME),
                         os.path.join(output_dir, EVAL_HISTORY_NAME))
    keep_best.forget_after(step // plan.steps_per_epoch)
    if step:
        logging.info("Resuming at step %d of %d (epoch %d, batch %d of %d).", step, plan.total_steps,
                     step // plan.steps_per_epoch + 1, step % plan.steps_per_epoch + 1, plan.steps_per_epoch)
    # Order matters: the evaluation adds val_* logs that the summaries write, then the backup.
    callbacks = [keep_best, TrainingSummaries(os.path.join(output_dir, LOGS_SUBDIR), save_summary_steps),
                 BackupEvery(checkpoints, save_checkpoints_steps), StopAtStep(plan.total_steps)]
    while step < plan.total_steps:
        epoch, done = divmod(step, plan.steps_per_epoch)
        # A resumed epoch first runs its remaining batches alone, so that epochs end where they would have.
        steps, epochs = (plan.steps_per_epoch - done, epoch + 1) if done else (
            plan.steps_per_epoch, math.ceil(plan.total_steps / plan.steps_per_epoch))
        # shuffle=False: the dataset shuffles itself (Keras would warn that it ignores shuffle=True).
        batches = make_train_batches() if first_batches is None else first_batches
        first_batches = None
        model.fit(batches.repeat().skip(step), initial_epoch=epoch, epochs=epochs, steps_per_epoch=steps,
                  callbacks=callbacks, shuffle=False, verbose=1)
        if int(model.optimizer.iterations) <= step:
            raise RuntimeError(f"Training stopped at step {step} before step {plan.total_steps}.")
        step = int(model.optimizer.iterations)
    if tf.io.gfile.exists(backup_dir):
        tf.io.gfile.rmtree(backup_dir)
    return keep_best


def write_json(path: str, value) -> None:
    write_text_atomically(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    logging.info("Wrote %s", path)

