"""Pre-trains BERT (masked LM + next-sentence prediction) on a CPU, GPUs, a cluster or a TPU.

The same code runs everywhere: a `tf.distribute` strategy from --strategy and the distributed
custom loop of `keras_bert_lite.training` (`strategy.run` inside a `tf.function` of
--steps_per_loop steps), checkpoints that survive a kill (rerun the same command to resume),
TensorBoard scalars and a progress bar. Flags are checked against each other before anything
is built; bad input stops the run with one line naming the flag or file.

BERT's two sequence lengths: --long_seq_length trains the last --long_steps (10 %) on longer
examples, so the positions used downstream are trained (the main job: the last 10 % at 64 tokens).

With --input_files the script trains on your pre-training TFRecords (the original BERT format,
as `tpu/create_pretraining_data.py` writes them). Without, it runs the main job: it builds the
data from the built-in corpus (`main_job_data.py`, next to this script), pre-trains on it, and
reports held-out masked-LM and next-sentence accuracy against baselines with the top predictions
for a few masked words (`main_job_report.py`), then shows whether pre-training transfers: its
encoder and a random-init twin fine-tuned on a suite of sentence classification tasks made from
documents kept out of pre-training (`main_job_transfer.py`; --transfer_learning_rates= skips it, and
a corpus too small for it skips it with one line saying why). The defaults are the main job's; set
--max_seq_length, --learning_rate and the step counts for your own data and model.

Every input (flags, files) is checked before anything is written: a run that fails on bad input
leaves --output_dir as it was, and prints one line `pretrain.py: error: ...` (exit code 1).
Everything is written under --output_dir: checkpoints/, summaries/ (TensorBoard: train and
eval), pretrainer.keras, encoder.keras, bert_config.json, vocab.txt and metrics.json (for the
main job also data/, evaluations.json and tokenizer_config.json). Rerunning a finished command
prints its report again; rerunning it after a kill at any moment resumes and finishes.

Usage:

    python tpu/pretrain.py                                   # the main job
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

import dataclasses
import json
import os
import re

import keras
import main_job_data
import main_job_report
import main_job_transfer
import tensorflow as tf
from absl import flags, logging

from keras_bert_lite.atomic import write_text_atomically
from keras_bert_lite.config import PRESETS, BertConfig
from keras_bert_lite.data import check_pretraining_files, pretraining_dataset
from keras_bert_lite.data.corpora import DEPENDENCY_PACKAGES, expand_file_patterns
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
# Passes over the training documents for the main job's --long_seq_length data: its examples hold
# twice the tokens of the first phase's, and the long phase is a tenth of the steps.
LONG_DUPE_FACTOR = 2
_EARLIER_FLAGS = frozenset(FLAGS)  # this script's own flags are those defined below

# Input.
flags.DEFINE_string("input_files", None, "Pre-training TFRecords in the original BERT format: globs, "
                    "comma-separated. Default: the main job's data, built from the built-in corpus.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt (required with --input_files; learned from the "
                    "built-in corpus otherwise).")
flags.DEFINE_bool("dynamic_masking", False, "Draw new masks every time an example is read.")
# The main job's data (the built-in corpus).
flags.DEFINE_list("corpus_packages", list(DEPENDENCY_PACKAGES), "Built-in corpus: installed packages whose "
                  "docstrings join Python's documentation (empty: Python's documentation only).")
flags.DEFINE_integer("max_documents", 0, "Built-in corpus: use only the first N documents (0: all).")
flags.DEFINE_integer("vocab_size", 2000, "Built-in corpus: size of the vocabulary learned from it.")
flags.DEFINE_bool("do_lower_case", True, "Built-in corpus: lower-case text (uncased vocabulary).")
flags.DEFINE_integer("dupe_factor", 5, "Built-in corpus: passes over the training documents, each with new "
                     "masks.")
flags.DEFINE_integer("num_examples_to_show", 4, "Built-in corpus: masked held-out words whose top "
                     "predictions are printed.")
flags.DEFINE_list("transfer_learning_rates", [f"{rate:g}" for rate in main_job_transfer.LEARNING_RATES],
                  "Built-in corpus: after pre-training, fine-tune the encoder and a random-init twin on each "
                  "task of the transfer suite, each side at the best of these learning rates on the task's "
                  "validation split (main_job_transfer.py); empty: skip.")
flags.DEFINE_integer("transfer_epochs", main_job_transfer.EPOCHS, "Built-in corpus: fine-tuning epochs of "
                     "the transfer suite.")
flags.DEFINE_integer("transfer_seq_length", main_job_transfer.SEQ_LENGTH, "Built-in corpus: tokens per "
                     "sentence when fine-tuning on the transfer suite.")
flags.DEFINE_integer("eval_every_steps", 2000, "Built-in corpus: evaluate on the held-out documents every N "
                     "steps and after the last (TensorBoard summaries/eval, metrics.json; 0: the last only).")
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
                     "downstream are trained; 0: one length throughout. Default: for the main job "
                     "--transfer_seq_length if longer than --max_seq_length, else 0; with --input_files 0.")
flags.DEFINE_integer("long_predictions_per_seq", None, "Masked positions per --long_seq_length example "
                     "(default: as many per token as --max_predictions_per_seq).")
flags.DEFINE_integer("long_steps", None, "Steps at --long_seq_length, the last of --num_train_steps (default: "
                     "10 %).")
flags.DEFINE_string("long_input_files", None, "With --input_files and --long_seq_length: the TFRecords written "
                    "at that length (the main job writes its own).")
flags.DEFINE_integer("train_batch_size", 32, "Global batch size (over all replicas and accumulation steps).")
flags.DEFINE_integer("num_train_steps", 10000, "Optimizer steps.")
flags.DEFINE_integer("num_warmup_steps", None, "Linear warmup steps (default: --warmup_proportion of the "
                     "steps).")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps with linear warmup, unless "
                   "--num_warmup_steps.")
flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate (BERT-base: 1e-4 at batch 256).")
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
             "steps_per_loop", "save_checkpoints_steps", "keep_checkpoint_max", "max_predictions_per_seq",
             "dupe_factor", "transfer_epochs", "transfer_seq_length")
_NOT_NEGATIVE = ("max_documents", "num_examples_to_show", "eval_every_steps")
_TRANSFER_FLAGS = ("transfer_learning_rates", "transfer_epochs", "transfer_seq_length")
_BUILTIN_CORPUS_ONLY = ("corpus_packages", "max_documents", "vocab_size", "do_lower_case", "dupe_factor",
                        "num_examples_to_show", "eval_every_steps",
                        *_TRANSFER_FLAGS)

OWN_FLAGS = sorted(frozenset(FLAGS) - _EARLIER_FLAGS)

for _name in _POSITIVE:
    flags.register_validator(_name, lambda value: value > 0, f"--{_name} must be positive.")
for _name in _NOT_NEGATIVE:
    flags.register_validator(_name, lambda value: value >= 0, f"--{_name} must be >= 0.")


def _positive_numbers(values: list[str]) -> bool:
    try:
        return all(float(value) > 0 for value in values)
    except ValueError:
        return False


flags.register_validator("transfer_learning_rates", _positive_numbers,
                         "--transfer_learning_rates must be positive numbers, separated by commas.")


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


@_checks("max_seq_length", "max_predictions_per_seq", "num_train_steps", "input_files", "long_seq_length",
         "long_predictions_per_seq", "long_steps", "long_input_files", "transfer_seq_length")
def _long_problem(v: dict) -> str | None:
    length = _long_length(v)
    if not length:
        given = [f"--{name}" for name in ("long_predictions_per_seq", "long_steps", "long_input_files") if _given(name)]
        return f"{' '.join(given)} only apply with --long_seq_length." if given else None
    if length <= v["max_seq_length"]:
        return f"--long_seq_length={length} must be longer than --max_seq_length={v['max_seq_length']} (or 0)."
    steps, predictions = _long_phase(v)
    if not 0 < steps < v["num_train_steps"]:
        return f"--long_steps={steps} must be in [1, --num_train_steps={v['num_train_steps']})."
    if not 0 < predictions <= length:
        return f"--long_predictions_per_seq={predictions} must be in [1, --long_seq_length={length}]."
    if bool(v["input_files"]) != bool(v["long_input_files"]):
        return ("--long_input_files (the data at --long_seq_length) goes with --input_files."
                if v["long_input_files"] else "--input_files with --long_seq_length needs --long_input_files.")
    return None


def _long_length(v) -> int:
    """--long_seq_length, or its default: for the main job the length its encoder is fine-tuned at
    (--transfer_seq_length), so that its positions are trained, when longer than --max_seq_length."""
    if v["long_seq_length"] is not None:
        return v["long_seq_length"]
    if v["input_files"] or v["transfer_seq_length"] <= v["max_seq_length"]:
        return 0
    return v["transfer_seq_length"]


def _long_phase(v) -> tuple[int, int]:
    """(steps, masked positions per example) of the --long_seq_length phase, defaults filled in."""
    steps = v["long_steps"] if v["long_steps"] is not None else max(1, v["num_train_steps"] // 10)
    predictions = v["long_predictions_per_seq"]
    if predictions is None:
        predictions = max(1, round(v["max_predictions_per_seq"] * _long_length(v) / v["max_seq_length"]))
    return steps, predictions


@_checks("input_files", "vocab_file", *_BUILTIN_CORPUS_ONLY)
def _input_problem(v: dict) -> str | None:
    if v["input_files"]:
        if not v["vocab_file"]:
            return "--input_files needs --vocab_file (the vocabulary the data was written with)."
        given = [f"--{name}" for name in _BUILTIN_CORPUS_ONLY if _given(name)]
        if given:
            return f"{' '.join(given)} only apply to the built-in corpus, not to --input_files."
    if v["vocab_size"] <= 5:
        return f"--vocab_size={v['vocab_size']} must be larger than the 5 special tokens."
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


def model_config(vocab_size: int, config_file: BertConfig | None) -> BertConfig:
    """The model from --bert_config_file (`config_file`) or --model, checked against the vocabulary
    and sequence length."""
    if config_file is not None:
        config = config_file
        if config.vocab_size < vocab_size:
            raise ValueError(f"--bert_config_file {FLAGS.bert_config_file}: vocab_size {config.vocab_size} "
                             f"is smaller than --vocab_file's {vocab_size} tokens.")
    else:
        config = BertConfig.preset(FLAGS.model, vocab_size=vocab_size, hidden_dropout_prob=FLAGS.dropout_rate,
                                   attention_probs_dropout_prob=FLAGS.dropout_rate)
    lengths = {"max_seq_length": FLAGS.max_seq_length, "long_seq_length": _long_length(FLAGS.flag_values_dict())}
    if not FLAGS.input_files and FLAGS.transfer_learning_rates:
        lengths["transfer_seq_length"] = FLAGS.transfer_seq_length
    for name, length in lengths.items():
        if length > config.max_position_embeddings:
            raise ValueError(f"--{name}={length} exceeds the model's max_position_embeddings "
                             f"{config.max_position_embeddings}.")
    return config


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])} (flags are --name=value).")
    if report_finished_run():
        return
    # The strategy comes first: multi-worker and TPU set-up must precede every other TF op.
    strategy = get_strategy(FLAGS.strategy, tpu_address=FLAGS.tpu, num_gpus=FLAGS.num_gpus,
                            all_reduce=FLAGS.all_reduce)
    if FLAGS.train_batch_size % (strategy.num_replicas_in_sync * FLAGS.gradient_accumulation_steps):
        raise ValueError(f"--train_batch_size={FLAGS.train_batch_size} must be a multiple of the "
                         f"{strategy.num_replicas_in_sync} replica(s) x --gradient_accumulation_steps.")
    # Every input file is read before anything is written to --output_dir.
    config_file = _read("--bert_config_file", BertConfig.from_json_file) if FLAGS.bert_config_file else None
    vocab_size = len(_read("--vocab_file", load_vocabulary)) if FLAGS.vocab_file else None
    init_checkpoint = None
    if FLAGS.init_checkpoint and not tf.io.gfile.exists(os.path.join(FLAGS.output_dir, CHECKPOINT_SUBDIR)):
        init_checkpoint = _read("--init_checkpoint", checkpoint_source)
    data = transfer_tasks = None
    long_length = _long_length(FLAGS.flag_values_dict())
    long_steps, long_predictions = _long_phase(FLAGS.flag_values_dict()) if long_length else (0, 0)
    phases = [(FLAGS.max_seq_length, FLAGS.max_predictions_per_seq)]  # (tokens, predictions) of each phase
    if long_steps:
        phases.append((long_length, long_predictions))
    if FLAGS.input_files:
        phase_files = [FLAGS.input_files] + ([FLAGS.long_input_files] if long_steps else [])
        for flag in ("--input_files", "--long_input_files")[: len(phases)]:
            _read(flag, expand_file_patterns)  # fails now, naming the pattern, if one matches nothing
        vocab_file = FLAGS.vocab_file
        for files, (length, predictions) in zip(phase_files, phases):
            check_input_files(files, model_config(vocab_size, config_file).vocab_size, length, predictions)
    else:
        data = build_main_job_data()
        vocab_file = data.vocab_file
        phase_files = [data.train_files] + [build_main_job_data(*phase).train_files for phase in phases[1:]]
        # Made now, so that a corpus too small for them is known before training.
        transfer_tasks = build_transfer_tasks(data) if FLAGS.transfer_learning_rates else None
        try:  # the held-out evaluation ends every main-job run: too little data for it stops the run now
            main_job_report.heldout_steps(data.heldout_files, FLAGS.train_batch_size)
        except ValueError as e:
            raise ValueError(f"--max_documents={FLAGS.max_documents}, --train_batch_size={FLAGS.train_batch_size}: "
                             f"{e}") from None
        vocab_size = len(load_vocabulary(vocab_file))
    config = model_config(vocab_size, config_file)
    loop = build_loop(strategy, config, init_checkpoint)

    long_from = FLAGS.num_train_steps - long_steps

    def dataset_fn(context: tf.distribute.InputContext, start_step: int) -> tf.data.Dataset:
        phase = int(bool(long_steps) and start_step >= long_from)
        return pretraining_dataset(
            phase_files[phase], FLAGS.train_batch_size, *phases[phase],
            dynamic_masking=FLAGS.dynamic_masking, vocabulary=vocab_file if FLAGS.dynamic_masking else None,
            seed=FLAGS.seed + start_step, input_context=context, vocab_size=config.vocab_size,
        )

    def evaluate_fn(step: int) -> dict[str, float]:
        return main_job_report.evaluate_heldout(loop, data.heldout_files, FLAGS.max_seq_length,
                                                FLAGS.max_predictions_per_seq)

    result = run_pretraining(
        loop, dataset_fn, FLAGS.num_train_steps, FLAGS.output_dir, steps_per_loop=FLAGS.steps_per_loop,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps, keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        evaluate_fn=evaluate_fn if data else None, eval_every_steps=FLAGS.eval_every_steps,
        new_data_steps=[long_from] if long_steps else [],
    )
    chief = strategy.extended.should_checkpoint
    metrics = dict(train=result, model=config.to_dict(), replicas=strategy.num_replicas_in_sync,
                   precision=keras.config.dtype_policy().name)
    if data is not None:
        metrics.update(report(loop.model, data, result["evaluations"], chief))
    if data is not None and chief and isinstance(transfer_tasks, dict):
        metrics["transfer"] = transfer(loop.model.encoder, transfer_tasks, data.vocab_file, result["step"])
    elif isinstance(transfer_tasks, str):
        metrics["transfer_skipped"] = transfer_tasks
    if chief:
        metrics["files"] = export_pretrained(loop.model, FLAGS.output_dir, vocab_file,
                                             do_lower_case=FLAGS.do_lower_case if data else None)
        metrics["flags"] = {name: FLAGS[name].value for name in OWN_FLAGS}
        path = os.path.join(FLAGS.output_dir, METRICS_FILE)
        write_text_atomically(path, json.dumps(metrics, indent=2) + "\n")
        logging.info("Wrote %s.", path)


def _read(flag: str, reader):
    """`reader(path)` of the file --flag names; a missing, unreadable or malformed file is one error
    naming the flag."""
    path = FLAGS[flag[2:]].value
    try:
        return reader(path)
    except (OSError, ValueError, tf.errors.OpError) as e:
        reason = e.message if isinstance(e, tf.errors.OpError) else str(e)
        raise ValueError(f"{flag}: {reason}" if path in reason else f"{flag} {path}: {reason}") from None


def report_finished_run() -> bool:
    """Prints the report of --output_dir's metrics.json if it is this command's, finished; returns
    whether it did (a rerun of a finished run then trains, evaluates and writes nothing)."""
    path = os.path.join(FLAGS.output_dir, METRICS_FILE)
    if not tf.io.gfile.exists(path):
        return False
    with tf.io.gfile.GFile(path) as f:
        metrics = json.load(f)
    if metrics.get("flags") != {name: FLAGS[name].value for name in OWN_FLAGS}:
        return False
    print(f"\n{FLAGS.output_dir} holds this command's finished run of {metrics['train']['step']} steps "
          "(use another --output_dir to train again).")
    if "transfer_skipped" in metrics:  # where the run printed it: when the data was read, before training
        print(metrics["transfer_skipped"])
    if "heldout" in metrics:
        print(f"\n{format_report(metrics)}\n")
    if "transfer" in metrics:
        print(f"{main_job_transfer.format_result(metrics['transfer'])}\n")
    return True


def format_report(metrics: dict) -> str:
    """The main job's printout from its metrics (`report`'s results)."""
    return main_job_report.format_report(metrics["heldout"], metrics["baseline"], metrics["masked_examples"],
                                         main_job_data.SHOWN_RULE, metrics["evaluations"])


def build_transfer_tasks(data: main_job_data.DemoData) -> dict[str, main_job_transfer.SentenceTask] | str:
    """The transfer suite's tasks from the documents the main job kept out of pre-training; or,
    when the corpus is too small for them, the line that says the suite is skipped (printed now).

    Raises:
        ValueError: too small a corpus while a transfer flag was set explicitly.
    """
    try:
        return main_job_transfer.build_tasks(*main_job_data.read_task_documents(data.task_documents_file))
    except ValueError as e:
        given = [f"--{name}" for name in _TRANSFER_FLAGS if _given(name)]
        if given:
            raise ValueError(f"{' '.join(given)}: the transfer suite needs more documents: {e} Use a larger "
                             "--max_documents, or --transfer_learning_rates= to skip it.") from None
        skipped = f"Transfer suite skipped: too few documents kept out of pre-training ({e})"
        print(skipped)
        return skipped


def transfer(encoder: BertEncoder, tasks: dict[str, main_job_transfer.SentenceTask], vocab_file: str,
             step: int) -> dict:
    """Fine-tunes `encoder` and a random-init twin on every task; prints the results and writes
    them to TensorBoard (summaries/eval, at `step`). Returns the result."""
    result = main_job_transfer.transfer_suite(
        encoder, vocab_file, tasks, FLAGS.transfer_seq_length, FLAGS.do_lower_case, seed=FLAGS.seed,
        learning_rates=[float(rate) for rate in FLAGS.transfer_learning_rates], epochs=FLAGS.transfer_epochs)
    main_job_transfer.write_summaries(os.path.join(FLAGS.output_dir, "summaries", "eval"), result, step)
    print(f"{main_job_transfer.format_result(result)}\n")
    return result


def build_main_job_data(long_seq_length: int = 0, long_predictions: int = 0) -> main_job_data.DemoData:
    """The main job's vocabulary and TFRecords from the built-in corpus (reused when present); with
    `long_seq_length`, its data of that length for the last steps (in data_long/, with the first
    data's vocabulary, LONG_DUPE_FACTOR passes: enough for a tenth of the steps)."""
    settings = main_job_data.DemoDataSettings(
        packages=tuple(FLAGS.corpus_packages), max_documents=FLAGS.max_documents, vocab_size=FLAGS.vocab_size,
        vocab_file=FLAGS.vocab_file, lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq, dupe_factor=FLAGS.dupe_factor,
        num_shown=FLAGS.num_examples_to_show, seed=FLAGS.seed,
    )
    if not long_seq_length:
        return main_job_data.build_demo_data(FLAGS.output_dir, settings)
    settings = dataclasses.replace(
        settings, vocab_file=FLAGS.vocab_file or os.path.join(FLAGS.output_dir, "vocab.txt"),
        max_seq_length=long_seq_length, max_predictions_per_seq=long_predictions,
        dupe_factor=min(FLAGS.dupe_factor, LONG_DUPE_FACTOR), num_shown=0)
    return main_job_data.build_demo_data(FLAGS.output_dir, settings, subdir="data_long")


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
                                     optimizer_type=FLAGS.optimizer)
        if policy == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    if init_checkpoint:
        kind = _read("--init_checkpoint", lambda path: restore_model_weights(pretrainer, path))
        logging.info("Initialised from %s (%s).", init_checkpoint, kind)
    return PretrainingLoop(strategy, pretrainer, optimizer, FLAGS.train_batch_size,
                           gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
                           jit_compile=jit_compile)


def report(model: BertPretrainer, data: main_job_data.DemoData, evaluations: list[dict], chief: bool) -> dict:
    """The main job's results: held-out metrics, baselines and predictions; printed on the chief."""
    heldout = evaluations[-1]
    reference = main_job_report.baselines(data.train_files, data.heldout_files, FLAGS.max_seq_length,
                                          FLAGS.max_predictions_per_seq, num_examples=heldout["examples"])
    shown = main_job_report.predict_masked_words(model, data.vocab_file, data.shown_sentences,
                                                 FLAGS.max_seq_length, FLAGS.do_lower_case)
    results = dict(heldout=heldout, baseline=reference, corpus=data.corpus, masked_examples=shown,
                   evaluations=evaluations)
    if chief:
        print(f"\n{format_report(json.loads(json.dumps(results)))}\n")  # as a rerun prints it from metrics.json
    return results


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
