"""The pre-training driver: resume, train in loops, summaries, progress, checkpoints, NaN guard, evaluation.

Example, with `loop` a `PretrainingLoop` (built as in `pretraining_loop`'s example):

    >>> def dataset_fn(context, start_step):
    ...     return pretraining_dataset("data/*.tfrecord", 256, 128, 20, input_context=context,
    ...                                seed=start_step)
    >>> result = run_pretraining(loop, dataset_fn, num_train_steps=10000, model_dir="out")
    >>> result["step"]
    10000
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from keras_bert_lite.atomic import write_text_atomically
from keras_bert_lite.training.pretraining_loop import STAT_NAMES, PretrainingLoop
from keras_bert_lite.training.run_checkpoints import NonFiniteLossError, TrainingCheckpoints

CHECKPOINT_SUBDIR = "checkpoints"
SUMMARY_SUBDIR = os.path.join("summaries", "train")
EVAL_SUMMARY_SUBDIR = os.path.join("summaries", "eval")
EVALUATIONS_FILE = "evaluations.json"
SCHEDULE_FILE = "schedule.json"  # the run's num_train_steps and learning-rate schedule, to tell a changed resume
_PROGRESS_STATS = ("loss", "mlm_accuracy", "nsp_accuracy")
# TensorBoard's scalar-plugin metadata, so scalars are written without the tensorboard package.
_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars")
)


def run_pretraining(
    loop: PretrainingLoop,
    dataset_fn: Callable[[tf.distribute.InputContext, int], tf.data.Dataset],
    num_train_steps: int,
    model_dir: str,
    steps_per_loop: int = 100,
    save_checkpoints_steps: int = 1000,
    keep_checkpoint_max: int = 5,
    progress: bool = True,
    evaluate_fn: Callable[[int], dict[str, float]] | None = None,
    eval_every_steps: int = 0,
    new_data_steps: Sequence[int] = (),
) -> dict:
    """Trains `loop.model` to `num_train_steps`, resuming from `model_dir` if it has checkpoints.

    Every `steps_per_loop` steps (one `tf.function` call) the driver checks the losses for
    NaN/Inf, writes TensorBoard scalars (the `STAT_NAMES` per step, `examples_per_second` per
    loop) and advances the progress bar (step, loss, accuracies, examples/s, time remaining). A
    checkpoint is written every `save_checkpoints_steps` steps and at the end; with
    `evaluate_fn`, the model is evaluated every `eval_every_steps` steps and at the end, and
    the evaluation's scalars go to `summaries/eval` (next to `summaries/train`, so TensorBoard
    draws held-out and training curves of the same name in one chart) and to
    `evaluations.json`, from which a resumed run takes the evaluations up to its checkpoint. A
    run resumed with another `num_train_steps` or learning-rate schedule than the run before
    (recorded in `schedule.json`) says so in a logged warning.
    Loops are cut to land on those steps. A run that resumes at `num_train_steps` trains
    nothing and evaluates once, so a rerun of a finished (or killed after its last checkpoint)
    run returns the same final evaluation. With `new_data_steps`, training switches data at
    those steps (e.g. BERT's longer sequences for the last steps): `dataset_fn` is called anew
    with that step, and returns that phase's data.

    Args:
        loop: the `PretrainingLoop` (model, optimizer and strategy).
        dataset_fn: `dataset_fn(input_context, start_step)` returns one input pipeline's
            dataset of `(features, labels)` batches (see `PretrainingLoop.distribute`).
            `start_step` is the step training (re)starts from: when the strategy cannot
            checkpoint the data iterator (more than one device), fold it into the shuffle seed
            so a resumed run does not replay the batches of the first run.
        num_train_steps: total optimizer steps (the learning-rate schedule's length).
        model_dir: output folder: `checkpoints/` and `summaries/train/` are created in it.
        steps_per_loop: optimizer steps per `tf.function` call (host round trip).
        save_checkpoints_steps: checkpoint interval in steps.
        keep_checkpoint_max: newest checkpoints kept.
        progress: show the progress bar (chief only).
        evaluate_fn: `evaluate_fn(step)` evaluates `loop.model` and returns name -> number
            (e.g. held-out `PretrainingLoop.evaluate` results); called on every worker.
        eval_every_steps: evaluation interval in steps (0: only after the last step).
        new_data_steps: steps in (0, num_train_steps) at which `dataset_fn(input_context, step)`
            is called again, its data replacing the previous (loops are cut to land on them).
            The data iterator is then not checkpointed (its data changes); a resumed run calls
            `dataset_fn` with the step it resumes from, as on many devices.

    Returns:
        A dict: `step` (final), `resumed_from` (0 for a fresh start), `checkpoint` (last path),
        `seconds` (training wall time), `examples_per_second` (over the loops after the first,
        which includes tracing; over all loops if there was one), `learning_rate` (of the last
        step) and the other `STAT_NAMES` averaged over the last loop; with `evaluate_fn`,
        `evaluations`: one dict per evaluation, `step`, `train_seconds` (training wall time of
        the run that made it, up to it) and the evaluation's results; those before the step
        resumed from come from `evaluations.json`.

    Raises:
        NonFiniteLossError: a loss (or gradient) became NaN/Inf; names the step and the last good
            checkpoint, which is kept.
        ValueError: bad intervals.
    """
    for name, value in (("num_train_steps", num_train_steps), ("steps_per_loop", steps_per_loop),
                        ("save_checkpoints_steps", save_checkpoints_steps),
                        ("keep_checkpoint_max", keep_checkpoint_max)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}.")
    if eval_every_steps < 0:
        raise ValueError(f"eval_every_steps must be >= 0, got {eval_every_steps}.")
    if any(not 0 < s < num_train_steps for s in new_data_steps):
        raise ValueError(f"new_data_steps must be in (0, num_train_steps={num_train_steps}), got {new_data_steps}.")
    eval_every_steps = eval_every_steps or num_train_steps
    strategy = loop.strategy
    chief = strategy.extended.should_checkpoint

    def data_from(step: int):
        return iter(loop.distribute(lambda context: dataset_fn(context, step)))

    iterator = None if new_data_steps else data_from(0)
    checkpoints = TrainingCheckpoints(
        os.path.join(model_dir, CHECKPOINT_SUBDIR), strategy, loop.model, loop.optimizer,
        loop.global_step, iterator=iterator, max_to_keep=keep_checkpoint_max,
    )
    start = checkpoints.restore()
    _record_schedule(model_dir, loop.optimizer, num_train_steps, start, chief)
    if iterator is None or (start and not checkpoints.saves_iterator):
        iterator = data_from(start)
    writer, eval_writer = (
        tf.summary.create_file_writer(os.path.join(model_dir, subdir)) if chief and wanted
        else tf.summary.create_noop_writer()
        for subdir, wanted in ((SUMMARY_SUBDIR, True), (EVAL_SUMMARY_SUBDIR, evaluate_fn is not None))
    )
    bar = keras.utils.Progbar(num_train_steps, stateful_metrics=("examples/s",) + _PROGRESS_STATS) \
        if progress and chief else None
    if bar is not None:
        bar.update(start)
    step, last_checkpoint, durations, stats = start, checkpoints.latest, [], {}
    evaluations_file = os.path.join(model_dir, EVALUATIONS_FILE)
    evaluations = []
    if evaluate_fn is not None and tf.io.gfile.exists(evaluations_file):
        with tf.io.gfile.GFile(evaluations_file) as f:
            evaluations = [e for e in json.load(f)
                           if e["step"] < start or e["step"] == start < num_train_steps]

    def evaluate() -> None:
        results = evaluate_fn(step)
        _write_scalars(eval_writer, results, step)
        evaluations.append(dict(step=step, train_seconds=sum(d for d, _ in durations), **results))
        if chief:
            write_text_atomically(evaluations_file, json.dumps(evaluations, indent=1) + "\n")
        logging.info("step %d: evaluation %s.", step, results)

    # Under dynamic loss scaling a non-finite gradient norm only skips the step, by design.
    checked = ("loss",) if loop.loss_scaling else ("loss", "gradient_norm")
    while step < num_train_steps:
        num_steps = min(steps_per_loop, num_train_steps - step,
                        *(every - step % every for every in (save_checkpoints_steps, eval_every_steps)),
                        *(s - step for s in new_data_steps if s > step))
        began = time.perf_counter()
        history = loop.train(iterator, num_steps)
        durations.append((time.perf_counter() - began, num_steps))
        for i in range(num_steps):
            for name in checked:
                if not np.isfinite(history[name][i]):
                    raise NonFiniteLossError(step + 1 + i, f"{name} is {history[name][i]}", last_checkpoint)
        examples_per_second = loop.global_batch_size * num_steps / durations[-1][0]
        for i in range(num_steps):
            _write_scalars(writer, {name: history[name][i] for name in STAT_NAMES}, step + 1 + i)
        step += num_steps
        _write_scalars(writer, {"examples_per_second": examples_per_second}, step)
        stats = {name: float(np.mean(history[name])) for name in STAT_NAMES}
        stats["learning_rate"] = float(history["learning_rate"][-1])
        if bar is not None:
            bar.update(step, [(name, stats[name]) for name in _PROGRESS_STATS]
                       + [("examples/s", examples_per_second)])
        if step % save_checkpoints_steps == 0 or step == num_train_steps:
            last_checkpoint = checkpoints.save() or last_checkpoint
            writer.flush()
            logging.info(
                "step %d/%d: loss %.4f, MLM accuracy %.4f, NSP accuracy %.4f, %.1f examples/s.",
                step, num_train_steps, stats["loss"], stats["mlm_accuracy"], stats["nsp_accuracy"],
                examples_per_second,
            )
        if evaluate_fn is not None and (step % eval_every_steps == 0 or step == num_train_steps):
            evaluate()
        if step in new_data_steps:
            logging.info("step %d: new data.", step)
            iterator = data_from(step)
    if evaluate_fn is not None and start >= num_train_steps:
        evaluate()
    writer.flush()
    eval_writer.flush()
    steady = durations[1:] or durations
    seconds = sum(d for d, _ in durations)
    rate = loop.global_batch_size * sum(n for _, n in steady) / sum(d for d, _ in steady) if steady else 0.0
    result = dict(step=step, resumed_from=start, checkpoint=last_checkpoint, seconds=seconds,
                  examples_per_second=rate, **stats)
    if evaluate_fn is not None:
        result["evaluations"] = evaluations
    return result


def _record_schedule(model_dir: str, optimizer: keras.optimizers.Optimizer, num_train_steps: int, start: int,
                     chief: bool) -> None:
    """Logs a warning when a run resumed at `start` has another `num_train_steps` or learning-rate
    schedule than the run that wrote its checkpoints (from `SCHEDULE_FILE`), and records this run's."""
    path = os.path.join(model_dir, SCHEDULE_FILE)
    schedule = json.loads(json.dumps({"num_train_steps": num_train_steps,
                                      "learning_rate": optimizer.get_config().get("learning_rate")}, default=str))
    before = None
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            before = json.load(f)
    changes = [f"{name} {json.dumps(before.get(name))} -> {json.dumps(value)}"
               for name, value in schedule.items() if before is not None and before.get(name) != value]
    if start and changes:
        logging.warning("Resuming at step %d with a changed schedule (%s): from step %d on, the learning rate "
                        "follows the new schedule, not the one the checkpoint was trained with.",
                        start, "; ".join(changes), start + 1)
    if chief and before != schedule:  # a rerun of the same run leaves the folder as it is
        write_text_atomically(path, json.dumps(schedule, indent=1) + "\n")


def _write_scalars(writer, scalars: dict[str, float], step: int) -> None:
    with writer.as_default():
        for name, value in scalars.items():
            tf.summary.write(name, tf.constant(value, tf.float32), step=step, metadata=_SCALAR_METADATA)
