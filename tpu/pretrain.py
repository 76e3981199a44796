"""Pre-trains BERT (masked LM + next-sentence prediction) on your pre-training TFRecords, on a CPU,
GPUs, a cluster or a TPU.

The input is TFRecords in the original BERT format (as `tpu/create_pretraining_data.py` writes
them): --input_files and --vocab_file are required. The same code runs everywhere: a
`tf.distribute` strategy from --strategy and the distributed custom loop of
`keras_bert_lite.training` (`strategy.run` inside a `tf.function` of --steps_per_loop steps),
checkpoints that survive a kill (rerun the same command to resume), TensorBoard scalars and a
progress bar. Flags are checked against each other before anything is built; bad input stops the
run with one line naming the flag or file.

BERT's two sequence lengths: --long_seq_length trains the last --long_steps (10 %) on longer
examples (--long_input_files, written at that length), so the positions used downstream are
trained. The defaults are the built-in main job's (`main_job.py`, next to this script, which
reuses this script's flags and code: `make pretrain`); set --max_seq_length,
--max_predictions_per_seq, --learning_rate and the step counts for your own data and model.

Every input (flags, files) is checked before anything is written: a run that fails on bad input
leaves --output_dir as it was, and prints one line `pretrain.py: error: ...` (exit code 1).
Everything is written under --output_dir: checkpoints/, summaries/ (TensorBoard), pretrainer.keras,
encoder.keras, bert_config.json, vocab.txt and metrics.json. Rerunning a finished command says so
and writes nothing; rerunning it after a kill at any moment resumes and finishes.

Usage:

    python tpu/pretrain.py --input_files='data/train-*' --vocab_file=vocab.txt --output_dir=out/mine
    python tpu/pretrain.py --strategy=tpu --tpu=my-tpu \\
        --input_files='gs://bucket/data/*.tfrecord' --vocab_file=gs://bucket/vocab.txt \\
        --bert_config_file=gs://bucket/bert_config.json --max_seq_length=128 \\
        --max_predictions_per_seq=20 --train_batch_size=256 --learning_rate=1e-4 \\
        --num_train_steps=1000000 --num_warmup_steps=10000 --steps_per_loop=1000 \\
        --output_dir=gs://bucket/run1
    # each worker of a cluster, with TF_CONFIG set:
    python tpu/pretrain.py --strategy=multi_worker --input_files=... --output_dir=/shared/run1
"""

from __future__ import annotations

import script_runner  # first: it sets what TensorFlow reads when it loads  # isort: skip

import json
import os
import re
from collections.abc import Callable

import keras
import tensorflow as tf
from absl import flags, logging

from keras_bert_lite.atomic import write_text_atomically
from keras_bert_lite.config import PRESETS, BertConfig
from keras_bert_lite.data import check_pretraining_files, pretraining_dataset
from keras_bert_lite.data.corpora import expand_file_patterns
from keras_bert_lite.models import BertEncoder, BertPretrainer
from keras_bert_lite.optimization import OPTIMIZER_TYPES, create_optimizer
from keras_bert_lite.text.tokenizer import load_vocabulary
from keras_bert_lite.training.distribute import (
    JIT_SETTINGS,
    PRECISIONS,
    STRATEGIES,
    get_strategy,
    precision_policy,
    use_jit_compile,
)
from keras_bert_lite.training.pretraining_driver import CHECKPOINT_SUBDIR, run_pretraining
from keras_bert_lite.training.pretraining_loop import PretrainingLoop
from keras_bert_lite.training.run_checkpoints import (
    checkpoint_source,
    export_pretrained,
    restore_model_weights,
)

FLAGS = flags.FLAGS
METRICS_FILE = "metrics.json"
MAIN_JOB_COMMAND = "python tpu/main_job.py"
_EARLIER_FLAGS = frozenset(FLAGS)  # this script's own flags are those defined below

# Input.
flags.DEFINE_string("input_files", None, "Required: pre-training TFRecords in the original BERT format: globs, "
                    "comma-separated.")
flags.DEFINE_string("vocab_file", None, "Required: the WordPiece vocab.txt the data was written with.")
flags.DEFINE_bool("dynamic_masking", False, "Draw new masks every time an example is read.")
# Model.
flags.DEFINE_string("bert_config_file", None, "Google bert_config.json, instead of --model.")
flags.DEFINE_enum("model", "tiny", PRESETS, "Model preset (its vocab_size is taken from the vocabulary).")
flags.DEFINE_float("dropout_rate", 0.0, "--model's dropout on hidden layers and attention (BERT: 0.1; a "
                   "short run learns faster without it).")
flags.DEFINE_string("init_checkpoint", None, "Initial weights: a checkpoint of this script, a .keras file, "
                    "or a Google BERT checkpoint. Ignored when --output_dir has checkpoints (resume).")
# Training.
flags.DEFINE_integer("max_seq_length", 32, "Tokens per example, as the data was written with (BERT: 128, "
                     "then 512; the tiny main job learns most per second at 32).")
flags.DEFINE_integer("max_predictions_per_seq", 5, "Masked positions per example, as the data was written "
                     "with.")
flags.DEFINE_integer("long_seq_length", None, "BERT's two sequence lengths: the last --long_steps steps train on "
                     "examples of this many tokens (longer than --max_seq_length), so the positions used "
                     "downstream are trained; 0 (default): one length throughout.")
flags.DEFINE_integer("long_predictions_per_seq", None, "Masked positions per --long_seq_length example "
                     "(default: as many per token as --max_predictions_per_seq).")
flags.DEFINE_integer("long_steps", None, "Steps at --long_seq_length, the last of --num_train_steps (default: "
                     "10 %).")
flags.DEFINE_string("long_input_files", None, "With --long_seq_length: the TFRecords written at that length.")
flags.DEFINE_integer("train_batch_size", 32, "Global batch size (over all replicas and accumulation steps).")
flags.DEFINE_integer("num_train_steps", 10000, "Optimizer steps.")
flags.DEFINE_integer("num_warmup_steps", None, "Linear warmup steps (default: --warmup_proportion of the "
                     "steps).")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warmup, unless "
                   "--num_warmup_steps.")
flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate (BERT-base: 1e-4 at batch 256).")
flags.DEFINE_float("weight_decay_rate", 0.01, "Decoupled weight decay, except on LayerNorm weights and biases "
                   "(BERT: 0.01).")
flags.DEFINE_enum("optimizer", "adamw", OPTIMIZER_TYPES, "AdamW (BERT) or LAMB (large batches).")
flags.DEFINE_integer("gradient_accumulation_steps", 1, "Micro-batches per step; the update equals one step "
                     "on the whole global batch.")
flags.DEFINE_integer("seed", 12345, "Seed of weights, data creation and shuffling.")
# Devices.
flags.DEFINE_enum("strategy", "default", STRATEGIES, "Distribution strategy.")
flags.DEFINE_string("tpu", None, "TPU name, 'local' on a TPU VM, or grpc://host:port (--strategy=tpu).")
flags.DEFINE_integer("num_gpus", None, "Local GPUs for --strategy=mirrored/one_device (default: all).")
flags.DEFINE_enum("all_reduce", "auto", ["auto", "ring", "nccl"], "Collective for --strategy=multi_worker.")
flags.DEFINE_enum("mixed_precision", "auto", PRECISIONS, "Compute dtype; auto: mixed_bfloat16 on TPU, "
                  "mixed_float16 (with loss scaling) on GPU, float32 on CPU. LayerNorm and softmax stay "
                  "float32.")
flags.DEFINE_enum("jit_compile", "auto", JIT_SETTINGS, "XLA for the training step; auto: on for GPUs (TPUs "
                  "always compile), off on CPUs, where it measured no faster (benchmarks/).")
flags.DEFINE_integer("steps_per_loop", 50, "Steps per tf.function call (one host round trip; 1000 on TPUs).")
# Output.
flags.DEFINE_string("output_dir", "output/pretrain", "Everything is written here; rerun to resume.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Checkpoint interval in steps.")
flags.DEFINE_integer("keep_checkpoint_max", 3, "Newest checkpoints kept.")

_POSITIVE = ("train_batch_size", "num_train_steps", "learning_rate", "gradient_accumulation_steps",
             "steps_per_loop", "save_checkpoints_steps", "keep_checkpoint_max", "max_predictions_per_seq")

OWN_FLAGS = sorted(frozenset(FLAGS) - _EARLIER_FLAGS)

for _name in _POSITIVE:
    flags.register_validator(_name, lambda value: value > 0, f"--{_name} must be positive.")
flags.register_validator("weight_decay_rate", lambda value: value >= 0, "--weight_decay_rate must be >= 0.")


def _checks(*names: str):
    """Registers the decorated function as an absl validator of `names`, run on the parsed flags
    before `main`: it gets their values and returns what is wrong with them, or None."""

    def register(check):
        def validate(values: dict) -> bool:
            problem = check(values)
            if problem:
                raise flags.ValidationError(problem)
            return True

        flags.register_multi_flags_validator(list(names), validate)
        return check

    return register


def _given(name: str) -> bool:
    return FLAGS[name].present > 0


@_checks("num_train_steps", "num_warmup_steps", "warmup_proportion")
def _warmup_problem(v: dict) -> str | None:
    if v["num_warmup_steps"] is not None:
        if not 0 <= v["num_warmup_steps"] <= v["num_train_steps"]:
            return (f"--num_warmup_steps={v['num_warmup_steps']} must be in [0, "
                    f"--num_train_steps={v['num_train_steps']}].")
        if _given("warmup_proportion"):
            return "--num_warmup_steps and --warmup_proportion both set; give one of them."
    if not 0 <= v["warmup_proportion"] <= 1:
        return f"--warmup_proportion={v['warmup_proportion']} must be in [0, 1]."
    return None


@_checks("train_batch_size", "gradient_accumulation_steps")
def _batch_problem(v: dict) -> str | None:
    if v["train_batch_size"] % max(1, v["gradient_accumulation_steps"]):
        return (f"--train_batch_size={v['train_batch_size']} must be a multiple of "
                f"--gradient_accumulation_steps={v['gradient_accumulation_steps']}.")
    return None


@_checks("max_seq_length", "max_predictions_per_seq")
def _length_problem(v: dict) -> str | None:
    if v["max_seq_length"] < 5:
        return f"--max_seq_length={v['max_seq_length']} must be at least 5 ([CLS] A [SEP] B [SEP])."
    if v["max_predictions_per_seq"] > v["max_seq_length"]:
        return (f"--max_predictions_per_seq={v['max_predictions_per_seq']} must be at most "
                f"--max_seq_length={v['max_seq_length']}.")
    return None


@_checks("bert_config_file", "model", "dropout_rate")
def _model_problem(v: dict) -> str | None:
    if v["bert_config_file"] and _given("model"):
        return "--bert_config_file and --model both set; give one of them."
    if v["bert_config_file"] and _given("dropout_rate"):
        return "--dropout_rate applies to --model; --bert_config_file has its own dropout."
    if not 0 <= v["dropout_rate"] < 1:
        return f"--dropout_rate={v['dropout_rate']} must be in [0, 1)."
    return None


@_checks("strategy", "tpu", "num_gpus", "all_reduce")
def _device_problem(v: dict) -> str | None:
    if v["tpu"] and v["strategy"] != "tpu":
        return "--tpu only applies to --strategy=tpu."
    if v["num_gpus"] is not None and v["strategy"] not in ("mirrored", "one_device"):
        return "--num_gpus only applies to --strategy=mirrored or one_device."
    if _given("all_reduce") and v["strategy"] != "multi_worker":
        return "--all_reduce only applies to --strategy=multi_worker."
    return None


def training_phases(default_long_seq_length: int = 0) -> tuple[list[tuple[int, int]], int]:
    """The (tokens, masked positions) per example of each phase of training: --max_seq_length's,
    then --long_seq_length's (default `default_long_seq_length`; 0: no second phase); and the
    number of steps of the second phase (0 without one).

    Raises:
        ValueError: the --long_* flags do not fit together or with the others.
    """
    length = FLAGS.long_seq_length if FLAGS.long_seq_length is not None else default_long_seq_length
    first = (FLAGS.max_seq_length, FLAGS.max_predictions_per_seq)
    if not length:
        given = [f"--{name}" for name in ("long_predictions_per_seq", "long_steps", "long_input_files")
                 if FLAGS[name].value is not None]
        if given:
            raise ValueError(f"{' '.join(given)} only apply with --long_seq_length.")
        return [first], 0
    if length <= FLAGS.max_seq_length:
        raise ValueError(f"--long_seq_length={length} must be longer than --max_seq_length={FLAGS.max_seq_length} "
                         "(or 0).")
    steps = FLAGS.long_steps if FLAGS.long_steps is not None else max(1, FLAGS.num_train_steps // 10)
    predictions = FLAGS.long_predictions_per_seq
    if predictions is None:
        predictions = max(1, round(FLAGS.max_predictions_per_seq * length / FLAGS.max_seq_length))
    if not 0 < steps < FLAGS.num_train_steps:
        raise ValueError(f"--long_steps={steps} must be in [1, --num_train_steps={FLAGS.num_train_steps}).")
    if not 0 < predictions <= length:
        raise ValueError(f"--long_predictions_per_seq={predictions} must be in [1, --long_seq_length={length}].")
    return [first, (length, predictions)], steps


def model_config(vocab_size: int, config_file: BertConfig | None, lengths: dict[str, int]) -> BertConfig:
    """The model from --bert_config_file (`config_file`) or --model, checked against the vocabulary
    and the sequence `lengths` it will see (flag name -> tokens)."""
    if config_file is not None:
        config = config_file
        if config.vocab_size < vocab_size:
            raise ValueError(f"--bert_config_file {FLAGS.bert_config_file}: vocab_size {config.vocab_size} "
                             f"is smaller than --vocab_file's {vocab_size} tokens.")
    else:
        config = BertConfig.preset(FLAGS.model, vocab_size=vocab_size, hidden_dropout_prob=FLAGS.dropout_rate,
                                   attention_probs_dropout_prob=FLAGS.dropout_rate)
    for name, length in lengths.items():
        if length > config.max_position_embeddings:
            raise ValueError(f"--{name}={length} exceeds the model's max_position_embeddings "
                             f"{config.max_position_embeddings}.")
    return config


def phase_lengths(phases: list[tuple[int, int]]) -> dict[str, int]:
    """The sequence lengths of `training_phases`, by flag name (for `model_config`)."""
    return dict(zip(("max_seq_length", "long_seq_length"), (length for length, _ in phases)))


def main(argv):
    check_arguments(argv)
    phases, long_steps = training_phases()
    if not FLAGS.input_files or not FLAGS.vocab_file:
        raise ValueError("--input_files and --vocab_file are required: your pre-training TFRecords and the vocabulary "
                         f"they were written with (the built-in main job, without them: {MAIN_JOB_COMMAND}).")
    if long_steps and not FLAGS.long_input_files:
        raise ValueError("--long_seq_length needs --long_input_files (the data written at that length).")
    if finished_run_metrics(OWN_FLAGS) is not None:
        return
    strategy = start_strategy()
    config_file, vocab_size, init_checkpoint = read_inputs()
    phase_files = [FLAGS.input_files, FLAGS.long_input_files][: len(phases)]
    for flag in ("--input_files", "--long_input_files")[: len(phases)]:
        read_flag_file(flag, expand_file_patterns)  # fails now, naming the pattern, if one matches nothing
    config = model_config(vocab_size, config_file, phase_lengths(phases))
    for files, (length, predictions) in zip(phase_files, phases):
        check_input_files(files, config.vocab_size, length, predictions)
    loop, result = train(strategy, config, init_checkpoint, FLAGS.vocab_file, phase_files, phases, long_steps)
    if strategy.extended.should_checkpoint:
        files = export_pretrained(loop.model, FLAGS.output_dir, FLAGS.vocab_file)
        write_metrics(run_metrics(result, config, strategy), files, OWN_FLAGS)


def check_arguments(argv: list[str]) -> None:
    """Flags are --name=value; anything else on the command line is an error."""
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])} (flags are --name=value).")


def start_strategy() -> tf.distribute.Strategy:
    """The --strategy, checked against --train_batch_size. Multi-worker and TPU set-up must precede
    every other TF op, so this comes before anything else is read or built."""
    strategy = get_strategy(FLAGS.strategy, tpu_address=FLAGS.tpu, num_gpus=FLAGS.num_gpus,
                            all_reduce=FLAGS.all_reduce)
    if FLAGS.train_batch_size % (strategy.num_replicas_in_sync * FLAGS.gradient_accumulation_steps):
        raise ValueError(f"--train_batch_size={FLAGS.train_batch_size} must be a multiple of the "
                         f"{strategy.num_replicas_in_sync} replica(s) x --gradient_accumulation_steps.")
    return strategy


def read_inputs() -> tuple[BertConfig | None, int | None, str | None]:
    """(--bert_config_file's config, --vocab_file's size, the --init_checkpoint to start from), each
    None when its flag is not given; read before anything is written to --output_dir. A resumed run
    (--output_dir has checkpoints) ignores --init_checkpoint."""
    config_file = read_flag_file("--bert_config_file", BertConfig.from_json_file) if FLAGS.bert_config_file else None
    vocab_size = len(read_flag_file("--vocab_file", load_vocabulary)) if FLAGS.vocab_file else None
    init_checkpoint = None
    if FLAGS.init_checkpoint and not tf.io.gfile.exists(os.path.join(FLAGS.output_dir, CHECKPOINT_SUBDIR)):
        init_checkpoint = read_flag_file("--init_checkpoint", checkpoint_source)
    return config_file, vocab_size, init_checkpoint


def train(strategy: tf.distribute.Strategy, config: BertConfig, init_checkpoint: str | None, vocab_file: str,
          phase_files: list[str], phases: list[tuple[int, int]], long_steps: int,
          evaluate_fn: Callable[[PretrainingLoop], Callable[[int], dict[str, float]]] | None = None,
          eval_every_steps: int = 0) -> tuple[PretrainingLoop, dict]:
    """Pre-trains (or resumes) to --num_train_steps on `phase_files` (a glob per phase of
    `training_phases`; the second for the last `long_steps`). Returns the loop and
    `run_pretraining`'s result. `evaluate_fn(loop)` gives the evaluation to run every
    `eval_every_steps` steps and after the last."""
    loop = build_loop(strategy, config, init_checkpoint)
    long_from = FLAGS.num_train_steps - long_steps

    def dataset_fn(context: tf.distribute.InputContext, start_step: int) -> tf.data.Dataset:
        phase = int(bool(long_steps) and start_step >= long_from)
        return pretraining_dataset(
            phase_files[phase], FLAGS.train_batch_size, *phases[phase],
            dynamic_masking=FLAGS.dynamic_masking, vocabulary=vocab_file if FLAGS.dynamic_masking else None,
            seed=FLAGS.seed + start_step, input_context=context, vocab_size=config.vocab_size,
        )

    result = run_pretraining(
        loop, dataset_fn, FLAGS.num_train_steps, FLAGS.output_dir, steps_per_loop=FLAGS.steps_per_loop,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps, keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        evaluate_fn=evaluate_fn(loop) if evaluate_fn else None, eval_every_steps=eval_every_steps,
        new_data_steps=[long_from] if long_steps else [],
    )
    return loop, result


def run_metrics(result: dict, config: BertConfig, strategy: tf.distribute.Strategy) -> dict:
    """The first entries of metrics.json: training's result, the model and where it ran."""
    return dict(train=result, model=config.to_dict(), replicas=strategy.num_replicas_in_sync,
                precision=keras.config.dtype_policy().name)


def write_metrics(metrics: dict, files: dict[str, str], own_flags: list[str]) -> None:
    """Writes metrics.json, last (after `export_pretrained`: it marks a finished run), with the exported
    `files` and the values of `own_flags` (which tell a finished run of the same command:
    `finished_run_metrics`)."""
    metrics["files"] = files
    metrics["flags"] = {name: FLAGS[name].value for name in own_flags}
    path = os.path.join(FLAGS.output_dir, METRICS_FILE)
    write_text_atomically(path, json.dumps(metrics, indent=2) + "\n")
    logging.info("Wrote %s.", path)


def finished_run_metrics(own_flags: list[str]) -> dict | None:
    """--output_dir's metrics.json if it is this command's (the same values of `own_flags`; a flag
    its run did not record counts at its default), finished, saying so; else None (a rerun of a
    finished run then trains and writes nothing)."""
    path = os.path.join(FLAGS.output_dir, METRICS_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        metrics = json.load(f)
    written = metrics.get("flags")
    # A flag added since the run finished had its default then.
    if written is None or {name: written.get(name, FLAGS[name].default) for name in own_flags} != {
            name: FLAGS[name].value for name in own_flags}:
        return None
    print(f"\n{FLAGS.output_dir} holds this command's finished run of {metrics['train']['step']} steps "
          "(use another --output_dir to train again).")
    return metrics


def read_flag_file(flag: str, reader):
    """`reader(path)` of the file --flag names; a missing, unreadable or malformed file is one error
    naming the flag."""
    path = FLAGS[flag[2:]].value
    try:
        return reader(path)
    except (OSError, ValueError, tf.errors.OpError) as e:
        reason = e.message if isinstance(e, tf.errors.OpError) else str(e)
        raise ValueError(f"{flag}: {reason}" if path in reason else f"{flag} {path}: {reason}") from None


def check_input_files(train_files: str, vocab_size: int, length: int, predictions: int) -> None:
    """The first record of every training file against the lengths it is read with and the vocabulary."""
    try:
        check_pretraining_files(train_files, length, predictions, vocab_size)
    except ValueError as e:
        source, length_flag, predictions_flag = (
            ("--input_files", "--max_seq_length", "--max_predictions_per_seq") if length == FLAGS.max_seq_length
            else ("--long_input_files", "--long_seq_length", "--long_predictions_per_seq"))
        raise ValueError(f"{source}: {e} (read with {length_flag}={length}, {predictions_flag}={predictions} and "
                         f"a vocabulary of {vocab_size} tokens)") from None


def build_loop(strategy: tf.distribute.Strategy, config: BertConfig, init_checkpoint: str | None) -> PretrainingLoop:
    """The pretrainer (from `init_checkpoint` if given), BERT's optimizer (warmup, precision from the
    flags) and the loop, under `strategy`."""
    policy = precision_policy(FLAGS.mixed_precision, strategy)
    keras.config.set_dtype_policy(policy)
    keras.utils.set_random_seed(FLAGS.seed)
    jit_compile = use_jit_compile(FLAGS.jit_compile)
    warmup = FLAGS.num_warmup_steps
    if warmup is None:
        warmup = int(FLAGS.warmup_proportion * FLAGS.num_train_steps)
    logging.info("Model %s, %s, %d replica(s), precision %s, XLA %s, %d warmup steps.", config,
                 type(strategy).__name__, strategy.num_replicas_in_sync, policy, jit_compile, warmup)
    with strategy.scope():
        pretrainer = BertPretrainer(BertEncoder(config))
        optimizer = create_optimizer(FLAGS.learning_rate, FLAGS.num_train_steps, warmup,
                                     FLAGS.weight_decay_rate, optimizer_type=FLAGS.optimizer)
        if policy == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    if init_checkpoint:
        kind = read_flag_file("--init_checkpoint", lambda path: restore_model_weights(pretrainer, path))
        logging.info("Initialised from %s (%s).", init_checkpoint, kind)
    return PretrainingLoop(strategy, pretrainer, optimizer, FLAGS.train_batch_size,
                           gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
                           jit_compile=jit_compile)


def run(argv: list[str] | None = None) -> None:
    """Parses the flags of `argv` (default: `sys.argv`) and runs `main`; bad input ends the process
    with one line `pretrain.py: error: ...` and exit code 1 (`script_runner.run`)."""
    script_runner.run(main, argv, describe_error)


def describe_error(error: BaseException) -> str:
    """One line for an error, naming the flag behind input errors TensorFlow raises mid-run."""
    message = script_runner.first_line(error)
    if isinstance(error, tf.errors.DataLossError):
        return (f"--input_files: a file is corrupted or truncated past its first record, which was checked "
                f"before training ({message}).")
    failed = re.search(r"assertion failed: \[(.*?)\]\n", str(error))
    if isinstance(error, tf.errors.InvalidArgumentError) and failed:  # the reader's checks, naming the file
        return "--input_files: " + failed.group(1).replace("\\'", "'")
    if isinstance(error, tf.errors.InvalidArgumentError) and "is not in [0," in message:
        return (f"--input_files hold token ids the model's vocabulary does not have (--vocab_file / "
                f"--bert_config_file vocab_size): {message}")
    if isinstance(error, tf.errors.OpError):
        return f"{type(error).__name__}: {message}"
    return message


if __name__ == "__main__":
    run()
