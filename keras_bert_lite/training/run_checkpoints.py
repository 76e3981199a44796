"""Checkpoints that survive a kill: save, resume, the NaN guard and the final export.

`tf.train.CheckpointManager` writes `ckpt-<step>.{index,data-*}` through a `_temp` folder and
renames them into place before the `checkpoint` state file, so a kill at any moment leaves the
previous checkpoints intact; `TrainingCheckpoints.restore` reads the disk, not the state file, so
even a lost or damaged state file resumes from the newest readable checkpoint.
"""

from __future__ import annotations

import json
import os
import re

import keras
import tensorflow as tf
from absl import logging

from keras_bert_lite.atomic import copy_atomically, write_text_atomically
from keras_bert_lite.interop import load_google_checkpoint, resolve_checkpoint_prefix
from keras_bert_lite.interop.huggingface import TOKENIZER_CONFIG_NAME
from keras_bert_lite.models import BertEncoder, BertPretrainer, save_model

_CHECKPOINT_NAME = "ckpt"
# What reading a truncated or missing checkpoint file raises (IndexError: "Read less bytes than requested").
_READ_ERRORS = (
    tf.errors.DataLossError, tf.errors.NotFoundError, tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError,
    IndexError,
)


class NonFiniteLossError(FloatingPointError):
    """Training produced a NaN or Inf loss (or gradient); the run was stopped.

    Attributes:
        step: the 1-based optimizer step whose loss was not finite.
        last_checkpoint: path of the last good checkpoint (None if none was written yet).
    """

    def __init__(self, step: int, what: str, last_checkpoint: str | None):
        self.step = step
        self.last_checkpoint = last_checkpoint
        kept = "No checkpoint was written before it."
        if last_checkpoint:
            kept = (f"The last good checkpoint {last_checkpoint} is kept; lower the learning rate or check "
                    "the input data, then rerun to resume from it.")
        super().__init__(f"Training stopped: {what} at step {step}. {kept}")


class TrainingCheckpoints:
    """Saves and restores model, optimizer, step and (where possible) the data iterator.

        >>> checkpoints = TrainingCheckpoints("out/ckpt", strategy, pretrainer, optimizer, loop.global_step)
        >>> checkpoints.restore()   # step resumed from, 0 on a fresh start
        >>> checkpoints.save()      # writes out/ckpt/ckpt-<global_step>

    Under MultiWorkerMirroredStrategy every worker must call `save` (the collective save needs
    all of them); only the chief's files are kept in `directory`, the others write to a
    scratch folder that is deleted right away.

    Args:
        directory: where `ckpt-<step>` files and the `checkpoint` state file live (local or
            any `tf.io.gfile` filesystem, e.g. gs://).
        strategy: the strategy the model was built under.
        model: the model being trained.
        optimizer: its optimizer (slots and iteration count are saved).
        global_step: int64 step variable (`PretrainingLoop.global_step`); names the files.
        iterator: the training data iterator; saved only when TensorFlow can checkpoint it (a
            single-device `tf.data` iterator), so a resumed run continues with the next batch.
        max_to_keep: newest checkpoints to keep.
    """

    def __init__(
        self,
        directory: str,
        strategy: tf.distribute.Strategy,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        global_step: tf.Variable,
        iterator=None,
        max_to_keep: int = 5,
    ):
        self.directory = directory
        self.saves_iterator = isinstance(iterator, tf.data.Iterator)  # not a distributed iterator
        trackables = dict(model=model, optimizer=optimizer, global_step=global_step)
        if self.saves_iterator:
            trackables["iterator"] = iterator
        self.checkpoint = tf.train.Checkpoint(**trackables)
        self._global_step = global_step
        self._is_chief = strategy.extended.should_checkpoint
        self._write_directory = directory
        if not self._is_chief:
            task_id = strategy.cluster_resolver.task_id
            self._write_directory = os.path.join(directory, f".worker_{task_id}_scratch")
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, self._write_directory, max_to_keep=max_to_keep,
            step_counter=global_step, checkpoint_name=_CHECKPOINT_NAME,
        )

    @property
    def latest(self) -> str | None:
        """Path prefix of the newest checkpoint in `directory` (None if there is none)."""
        return next(iter(self._candidates()), None)

    def save(self) -> str | None:
        """Writes `ckpt-<global_step>`; returns its path on the chief (None on other workers)."""
        path = self.manager.save(checkpoint_number=int(self._global_step.numpy()))
        if not self._is_chief:
            tf.io.gfile.rmtree(self._write_directory)
            return None
        logging.info("Saved checkpoint %s.", path)
        return path

    def restore(self) -> int:
        """Restores the newest readable checkpoint in `directory`; returns its step (0 if none).

        Raises:
            ValueError: a checkpoint was read but does not match the model or optimizer (e.g.
                written for another config), naming the checkpoint.
        """
        for path in self._candidates():
            try:
                self.checkpoint.restore(path).assert_existing_objects_matched().expect_partial()
            except _READ_ERRORS as e:
                logging.warning("Skipping unreadable checkpoint %s: %s", path, str(e).splitlines()[0])
                continue
            except AssertionError as e:
                raise ValueError(f"Checkpoint {path} does not match this model/optimizer: {e}") from None
            step = int(self._global_step.numpy())
            logging.info("Resumed from %s at step %d.", path, step)
            return step
        return 0

    def _candidates(self) -> list[str]:
        """Checkpoint prefixes in `directory`, newest (highest step) first, complete ones only (an
        `.index` file is renamed into place last), read from the disk: not from the state file."""
        if not tf.io.gfile.isdir(self.directory):
            return []
        steps = [int(match[1]) for name in tf.io.gfile.listdir(self.directory)
                 if (match := re.fullmatch(rf"{_CHECKPOINT_NAME}-(\d+)\.index", name))]
        return [os.path.join(self.directory, f"{_CHECKPOINT_NAME}-{step}") for step in sorted(steps)[::-1]]


def checkpoint_source(path: str) -> str:
    """The `.keras` file or TensorFlow checkpoint prefix that `path` names, checked to be there.

    Args:
        path: a `.keras` file; a checkpoint prefix, its `.index` or `.data-*` file, or a folder
            holding one (see `keras_bert_lite.interop.resolve_checkpoint_prefix`).

    Raises:
        FileNotFoundError: nothing at `path`.
        ValueError: `path` is a file of another kind (e.g. a `.keras` name on a file that is not
            a zip archive), naming it.
    """
    is_file = tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)
    if path.endswith(".keras"):
        if not is_file:
            raise FileNotFoundError(f"No such .keras file: {path}")
        with tf.io.gfile.GFile(path, "rb") as f:
            if f.read(4) != b"PK\x03\x04":  # a zip archive's first bytes
                raise ValueError(f"{path} is not a .keras file (Keras writes a zip archive).")
        return path
    if is_file and not (path.endswith(".index") or ".data-" in os.path.basename(path)):
        raise ValueError(f"{path} is neither a .keras file nor a TensorFlow checkpoint (give a .keras file, "
                         "a checkpoint prefix or a folder holding one).")
    return resolve_checkpoint_prefix(path)


def restore_model_weights(model: BertPretrainer, path: str) -> str:
    """Initialises a pretrainer from `path`; returns which kind of checkpoint it was.

    Accepts a `.keras` file of a `BertPretrainer` or `BertEncoder`, a checkpoint written by
    `TrainingCheckpoints` (model weights only; optimizer and step start afresh), or a Google
    TF1 BERT checkpoint (through `keras_bert_lite.interop.load_google_checkpoint`; the
    pre-training heads are loaded when present).

    Raises:
        FileNotFoundError: nothing at `path`.
        ValueError: the checkpoint does not fit the model, or `path` is a file of another kind.
    """
    source = checkpoint_source(path)
    if source.endswith(".keras"):
        source_model = keras.saving.load_model(source)
        target = model.encoder if isinstance(source_model, BertEncoder) else model
        if len(source_model.weights) != len(target.weights):
            raise ValueError(f"init_checkpoint {path} holds a different model ({source_model.name}) than the one "
                             "trained.")
        target.set_weights(source_model.get_weights())
        return "keras"
    names = {name for name, _ in tf.train.list_variables(source)}
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
        status = tf.train.Checkpoint(model=model).read(source).expect_partial()
        try:
            status.assert_existing_objects_matched()
        except AssertionError as e:
            raise ValueError(f"init_checkpoint {source} does not match the model: {e}") from None
        return "training checkpoint"
    report = load_google_checkpoint(model, source, strict=False)
    logging.info("Loaded Google checkpoint %s: %s", source, report)
    return "google"


def export_pretrained(
    model: BertPretrainer, output_dir: str, vocab_file: str | None = None, do_lower_case: bool | None = None,
) -> dict[str, str]:
    """Saves the trained model for fine-tuning as float32 copies, each file written atomically.

    Writes `pretrainer.keras` (encoder and heads), `encoder.keras`, `bert_config.json`, and when
    given, `vocab_file` as `vocab.txt` and `tokenizer_config.json` with `{"do_lower_case": ...}`:
    without it `from_checkpoint` infers the casing from the vocabulary, which a small vocabulary
    learned from cased text may not reveal. Call it outside `strategy.scope()`, on the chief only.

    Args:
        model: the trained pre-training model.
        output_dir: folder to write into (local or any `tf.io.gfile` filesystem); created if needed.
        vocab_file: the WordPiece vocabulary the model was trained with.
        do_lower_case: whether the training text was lower-cased; None writes no `tokenizer_config.json`.

    Returns:
        Name ("pretrainer", "encoder", "bert_config", "vocab", "tokenizer_config") -> written path.
    """
    tf.io.gfile.makedirs(output_dir)
    copy = BertPretrainer(BertEncoder(model.encoder.config, dtype="float32"), name=model.name)
    copy.set_weights(model.get_weights())
    paths = {
        "pretrainer": save_model(copy, os.path.join(output_dir, "pretrainer.keras")),
        "encoder": save_model(copy.encoder, os.path.join(output_dir, "encoder.keras")),
        "bert_config": os.path.join(output_dir, "bert_config.json"),
    }
    copy.encoder.config.to_json_file(paths["bert_config"])
    if vocab_file:
        paths["vocab"] = copy_atomically(vocab_file, os.path.join(output_dir, "vocab.txt"))
    if do_lower_case is not None:
        paths["tokenizer_config"] = write_text_atomically(
            os.path.join(output_dir, TOKENIZER_CONFIG_NAME), json.dumps({"do_lower_case": do_lower_case}) + "\n")
    logging.info("Exported %s.", ", ".join(sorted(paths.values())))
    return paths

