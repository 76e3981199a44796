"""The main job (`make pretrain`): pre-trains a tiny BERT on the built-in corpus and shows what it learned.

It builds the data from the built-in corpus (`main_job_data.py`), pre-trains on it with
`pretrain.py`'s flags and code (this script adds the corpus, report and transfer-suite flags
below), and reports held-out masked-LM and next-sentence accuracy against baselines with the top
predictions for a few masked words (`main_job_report.py`), then shows whether pre-training
transfers: its encoder and a random-init twin fine-tuned on a suite of sentence classification
tasks made from documents kept out of pre-training (`main_job_transfer.py`;
--transfer_learning_rates= skips it, and a corpus too small for it skips it with one line saying
why). By default the last 10 % of the steps train at --transfer_seq_length (64 tokens), the
length the suite fine-tunes at.

As with `pretrain.py`, every input is checked before anything is written and bad input is one
line `main_job.py: error: ...` (exit code 1). Everything is written under --output_dir: what
`pretrain.py` writes, and data/ (data_long/), evaluations.json and tokenizer_config.json.
Rerunning a finished command prints its report again; rerunning it after a kill at any moment
resumes and finishes.

Usage:

    python tpu/main_job.py                                                   # make pretrain
    python tpu/main_job.py --num_train_steps=200 --max_documents=300 --transfer_learning_rates= \\
        --output_dir=out/short                                               # a short run
"""

from __future__ import annotations

import script_runner  # first: it sets what TensorFlow reads when it loads  # isort: skip

import dataclasses
import json
import os

import keras
import main_job_data
import main_job_report
import main_job_transfer
import pretrain
from absl import flags

from keras_bert_lite.data.corpora import DEPENDENCY_PACKAGES
from keras_bert_lite.models import BertEncoder, BertPretrainer
from keras_bert_lite.text.tokenizer import load_vocabulary
from keras_bert_lite.training import export_pretrained

FLAGS = flags.FLAGS
# Passes over the training documents for the --long_seq_length data: its examples hold twice the
# tokens of the first phase's, and the long phase is a tenth of the steps.
LONG_DUPE_FACTOR = 2
_EARLIER_FLAGS = frozenset(FLAGS)  # pretrain.py's and the libraries'; this script's are those below

flags.DEFINE_list("corpus_packages", list(DEPENDENCY_PACKAGES), "Installed packages whose docstrings join "
                  "Python's documentation in the built-in corpus (empty: Python's documentation only).")
flags.DEFINE_integer("max_documents", 0, "Use only the first N documents of the corpus (0: all).")
flags.DEFINE_integer("vocab_size", 2000, "Size of the vocabulary learned from the corpus (unless --vocab_file).")
flags.DEFINE_bool("do_lower_case", True, "Lower-case text (uncased vocabulary).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of each training example's tokens masked, up to "
                   "--max_predictions_per_seq (BERT: 0.15); the held-out data is masked at BERT's "
                   f"{main_job_data.HELDOUT_MASKED_LM_PROB} whatever it is.")
flags.DEFINE_bool("do_whole_word_mask", False, "Mask whole words (all their WordPieces) in the training data, as "
                  "create_pretraining_data.py does; the held-out data keeps BERT's token masking.")
flags.DEFINE_integer("dupe_factor", 5, "Passes over the training documents, each with new masks.")
flags.DEFINE_integer("num_examples_to_show", 4, "Masked held-out words whose top predictions are printed.")
flags.DEFINE_list("transfer_learning_rates", [f"{rate:g}" for rate in main_job_transfer.LEARNING_RATES],
                  "After pre-training, fine-tune the encoder and a random-init twin on each task of the transfer "
                  "suite, each side at the best of these learning rates on the task's validation split "
                  "(main_job_transfer.py); empty: skip.")
flags.DEFINE_integer("transfer_epochs", main_job_transfer.EPOCHS, "Fine-tuning epochs of the transfer suite.")
flags.DEFINE_integer("transfer_seq_length", main_job_transfer.SEQ_LENGTH, "Tokens per sentence when fine-tuning "
                     "on the transfer suite; by default also the --long_seq_length, when longer than "
                     "--max_seq_length.")
flags.DEFINE_integer("eval_every_steps", 2000, "Evaluate on the held-out documents every N steps and after the "
                     "last (TensorBoard summaries/eval, metrics.json; 0: the last only).")
flags.adopt_module_key_flags(pretrain)  # --help lists pretrain.py's flags too
# XLA pre-trains the main job's tiny encoder at 32 and 64 tokens faster on CPUs too (measured in
# benchmarks/README.md, "Main job"), where pretrain.py's --jit_compile=auto leaves it off.
FLAGS.set_default("jit_compile", "true")

# What tells a finished run of the same command (metrics.json's "flags").
OWN_FLAGS = sorted(set(pretrain.OWN_FLAGS) | (frozenset(FLAGS) - _EARLIER_FLAGS))
_TRANSFER_FLAGS = ("transfer_learning_rates", "transfer_epochs", "transfer_seq_length")

for _name in ("dupe_factor", "transfer_epochs", "transfer_seq_length"):
    flags.register_validator(_name, lambda value: value > 0, f"--{_name} must be positive.")
for _name in ("max_documents", "num_examples_to_show", "eval_every_steps"):
    flags.register_validator(_name, lambda value: value >= 0, f"--{_name} must be >= 0.")
flags.register_validator("masked_lm_prob", lambda value: 0 < value <= 1, "--masked_lm_prob must be in (0, 1].")
flags.register_validator("vocab_size", lambda value: value > 5,
                         "--vocab_size must be larger than the 5 special tokens.")


def _positive_numbers(values: list[str]) -> bool:
    try:
        return all(float(value) > 0 for value in values)
    except ValueError:
        return False


flags.register_validator("transfer_learning_rates", _positive_numbers,
                         "--transfer_learning_rates must be positive numbers, separated by commas.")


def main(argv):
    pretrain.check_arguments(argv)
    given = [f"--{name}" for name in ("input_files", "long_input_files") if FLAGS[name].value]
    if given:
        raise ValueError(f"{' '.join(given)}: the main job trains on the built-in corpus; train on your "
                         "TFRecords with tpu/pretrain.py.")
    long_default = FLAGS.transfer_seq_length if FLAGS.transfer_seq_length > FLAGS.max_seq_length else 0
    phases, long_steps = pretrain.training_phases(default_long_seq_length=long_default)
    if report_finished_run():
        return
    strategy = pretrain.start_strategy()
    config_file, _, init_checkpoint = pretrain.read_inputs()  # --vocab_file, if given, is read here
    data = build_main_job_data()
    phase_files = [data.train_files] + [build_main_job_data(*phase).train_files for phase in phases[1:]]
    # Made now, so that a corpus too small for them is known before training.
    transfer_tasks = build_transfer_tasks(data) if FLAGS.transfer_learning_rates else None
    try:  # the held-out evaluation ends every run: too little data for it stops the run now
        main_job_report.heldout_steps(data.heldout_files, FLAGS.train_batch_size)
    except ValueError as e:
        raise ValueError(f"--max_documents={FLAGS.max_documents}, --train_batch_size={FLAGS.train_batch_size}: "
                         f"{e}") from None
    lengths = pretrain.phase_lengths(phases)
    if FLAGS.transfer_learning_rates:
        lengths["transfer_seq_length"] = FLAGS.transfer_seq_length
    config = pretrain.model_config(len(load_vocabulary(data.vocab_file)), config_file, lengths)

    def evaluate_fn(loop):
        return lambda step: main_job_report.evaluate_heldout(loop, data.heldout_files, FLAGS.max_seq_length,
                                                             FLAGS.max_predictions_per_seq)

    loop, result = pretrain.train(strategy, config, init_checkpoint, data.vocab_file, phase_files, phases,
                                  long_steps, evaluate_fn=evaluate_fn, eval_every_steps=FLAGS.eval_every_steps)
    chief = strategy.extended.should_checkpoint
    metrics = pretrain.run_metrics(result, config, strategy)
    metrics.update(report(loop.model, data, result["evaluations"], chief))
    if isinstance(transfer_tasks, str):
        metrics["transfer_skipped"] = transfer_tasks
    if chief:
        files = export_pretrained(loop.model, FLAGS.output_dir, data.vocab_file, do_lower_case=FLAGS.do_lower_case)
        if isinstance(transfer_tasks, dict):  # the suite fine-tunes what the folder holds, as a user would
            encoder = keras.saving.load_model(files["encoder"])
            metrics["transfer"] = transfer(encoder, transfer_tasks, data.vocab_file, result["step"])
        pretrain.write_metrics(metrics, files, OWN_FLAGS)


def report_finished_run() -> bool:
    """Prints the report of --output_dir's metrics.json if it is this command's, finished; returns
    whether it did (a rerun of a finished run then trains, evaluates and writes nothing)."""
    metrics = pretrain.finished_run_metrics(OWN_FLAGS)
    if metrics is None:
        return False
    if "transfer_skipped" in metrics:  # where the run printed it: when the data was read, before training
        print(metrics["transfer_skipped"])
    print(f"\n{format_report(metrics)}\n")
    if "transfer" in metrics:
        print(f"{main_job_transfer.format_result(metrics['transfer'])}\n")
    return True


def format_report(metrics: dict) -> str:
    """The main job's printout from its metrics (`report`'s results)."""
    return main_job_report.format_report(metrics["heldout"], metrics["baseline"], metrics["masked_examples"],
                                         main_job_data.SHOWN_RULE, metrics["evaluations"])


def build_main_job_data(long_seq_length: int = 0, long_predictions: int = 0) -> main_job_data.DemoData:
    """The vocabulary and TFRecords from the built-in corpus (reused when present); with
    `long_seq_length`, its data of that length for the last steps (in data_long/, with the first
    data's vocabulary, LONG_DUPE_FACTOR passes: enough for a tenth of the steps)."""
    settings = main_job_data.DemoDataSettings(
        packages=tuple(FLAGS.corpus_packages), max_documents=FLAGS.max_documents, vocab_size=FLAGS.vocab_size,
        vocab_file=FLAGS.vocab_file, lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq, masked_lm_prob=FLAGS.masked_lm_prob,
        whole_word_masking=FLAGS.do_whole_word_mask, dupe_factor=FLAGS.dupe_factor,
        num_shown=FLAGS.num_examples_to_show, seed=FLAGS.seed,
    )
    if not long_seq_length:
        return main_job_data.build_demo_data(FLAGS.output_dir, settings)
    settings = dataclasses.replace(
        settings, vocab_file=FLAGS.vocab_file or os.path.join(FLAGS.output_dir, "vocab.txt"),
        max_seq_length=long_seq_length, max_predictions_per_seq=long_predictions,
        dupe_factor=min(FLAGS.dupe_factor, LONG_DUPE_FACTOR), num_shown=0)
    return main_job_data.build_demo_data(FLAGS.output_dir, settings, subdir="data_long")


def build_transfer_tasks(data: main_job_data.DemoData) -> dict[str, main_job_transfer.SentenceTask] | str:
    """The transfer suite's tasks from the documents kept out of pre-training; or, when the corpus
    is too small for them, the line that says the suite is skipped (printed now).

    Raises:
        ValueError: too small a corpus while a transfer flag was set explicitly.
    """
    try:
        return main_job_transfer.build_tasks(*main_job_data.read_task_documents(data.task_documents_file))
    except ValueError as e:
        given = [f"--{name}" for name in _TRANSFER_FLAGS if FLAGS[name].present]
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


def report(model: BertPretrainer, data: main_job_data.DemoData, evaluations: list[dict], chief: bool) -> dict:
    """The results: held-out metrics, baselines and predictions; printed on the chief."""
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
    with one line `main_job.py: error: ...` and exit code 1 (`script_runner.run`)."""
    script_runner.run(main, argv, pretrain.describe_error)


if __name__ == "__main__":
    run()
