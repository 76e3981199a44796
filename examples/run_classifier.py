r"""Fine-tunes BERT on a GLUE task (sentence or sentence-pair classification, or STS-B regression),
or on your own labelled texts in a CSV or TSV file.

    python examples/run_classifier.py --task_name=mrpc --data_dir=glue_data/MRPC \
        --init_checkpoint=uncased_L-12_H-768_A-12 --output_dir=/tmp/mrpc
    python examples/run_classifier.py --train_file=reviews.csv --eval_file=dev.csv \
        --text_columns=review --label_column=sentiment \
        --init_checkpoint=uncased_L-12_H-768_A-12 --output_dir=/tmp/reviews

Your own files have a header line naming the columns (`.csv`: comma separated with quotes as
Excel and pandas write them; any other name: tab separated); --text_columns names the text
column (two for text pairs), --label_column the labels: any strings, in class-id order as
--label_names lists them (default: the training file's labels, sorted). Their metric is accuracy.

Trains with `model.fit` (progress bar), evaluates the task's GLUE metrics on the dev file after
every epoch, keeps the best model (`best_model.keras`, without optimizer state), then writes
`eval_results.json`, `dev_predictions.tsv` and, with --do_predict, `test_results.tsv` (GLUE
submission layout). TensorBoard logs go to `logs/`; rerunning the same command after a kill
resumes from `backup/`. --max_steps=20 makes a smoke run.
"""

from __future__ import annotations

import functools
import os

import common
import keras
import numpy as np
from absl import flags, logging

from keras_bert_lite.atomic import write_text_atomically
from keras_bert_lite.data.glue import (
    ClassificationData,
    GlueTask,
    get_glue_task,
    glue_metrics,
    read_classification_file,
    read_glue_tsv,
)
from keras_bert_lite.export import export_saved_model
from keras_bert_lite.models.classifier import BertClassifier, check_pooling
from keras_bert_lite.models.text_inputs import text_dataset

FLAGS = flags.FLAGS
flags.DEFINE_string("task_name", None, "GLUE task: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli.")
flags.DEFINE_string("data_dir", None, "Folder with the task's train.tsv, dev file and test file.")
flags.DEFINE_bool("do_predict", False, "Also predict the GLUE task's test file.")
flags.DEFINE_string("train_file", None, "Your own training file instead of a GLUE task: CSV (.csv) or TSV with a "
                    "header line.")
flags.DEFINE_string("eval_file", None, "Your own evaluation file, in the layout of --train_file.")
flags.DEFINE_list("text_columns", None, "With --train_file: the header name of the text column, or two names for "
                  "text pairs.")
flags.DEFINE_string("label_column", None, "With --train_file: the header name of the label column.")
flags.DEFINE_list("label_names", None, "Names of the classes in class-id order, for the exported model's labels and "
                  "dev_predictions.tsv (default: the task's labels, e.g. 0,1 for SST-2); test_results.tsv keeps "
                  "GLUE's labels. With --train_file: the label values of the files in class-id order (default: "
                  "the training file's, sorted).")
flags.DEFINE_list("pooling", ["pooler"], "What the classifier reads: pooler (the paper's pooled [CLS]) or "
                  "sentence-transformers' modes over the last layer's real tokens, e.g. mean (docs/fine-tuning.md).")
common.define_flags(max_seq_length=128, learning_rate=2e-5)
flags.adopt_module_key_flags(common)


def _texts(data: ClassificationData):
    return data.text_a if data.text_b is None else (data.text_a, data.text_b)


def eval_batches(data: ClassificationData, preprocessor):
    """`data`'s texts in order, in batches of --eval_batch_size, for `model.predict`: logits or
    probabilities [N, num_classes] (only their argmax is used), or the regression value [N, 1].
    Built once per split (each build traces the tokenization again)."""
    return text_dataset(_texts(data), preprocessor=preprocessor, batch_size=FLAGS.eval_batch_size)


def _label_names(task) -> list[str] | None:
    if FLAGS.label_names is None:
        return None if task.is_regression else list(task.labels)
    if task.is_regression or len(FLAGS.label_names) != task.num_classes:
        expected = "none (a regression task)" if task.is_regression else f"{task.num_classes} names"
        raise ValueError(f"--label_names has {len(FLAGS.label_names)} names; {task.name} takes {expected}.")
    return list(FLAGS.label_names)


def read_data() -> tuple[GlueTask, ClassificationData, ClassificationData, ClassificationData | None]:
    """(task, train, dev, test or None): a GLUE task's files, or your own files as a task of their own."""
    own = {"train_file": FLAGS.train_file, "eval_file": FLAGS.eval_file, "text_columns": FLAGS.text_columns,
           "label_column": FLAGS.label_column}
    if FLAGS.task_name is not None:
        given = [f"--{name}" for name, value in own.items() if value is not None]
        if FLAGS.data_dir is None or given:
            raise ValueError(f"--task_name reads the GLUE files of --data_dir; drop {', '.join(given)}."
                                 if given else "--task_name needs --data_dir (the folder of the task's files).")
        task = get_glue_task(FLAGS.task_name)
        train = read_glue_tsv(os.path.join(FLAGS.data_dir, "train.tsv"), task, "train", FLAGS.on_error)
        dev = read_glue_tsv(os.path.join(FLAGS.data_dir, task.dev_file), task, "dev", FLAGS.on_error)
        test = read_glue_tsv(os.path.join(FLAGS.data_dir, task.test_file), task, "test", FLAGS.on_error) \
            if FLAGS.do_predict else None
        return task, train, dev, test
    missing = [f"--{name}" for name, value in own.items() if value is None]
    if missing:
        raise ValueError(f"Give --task_name and --data_dir (a GLUE task), or --train_file, --eval_file, "
                             f"--text_columns and --label_column (your own data); missing: {', '.join(missing)}.")
    if FLAGS.data_dir is not None or FLAGS.do_predict:
        raise ValueError("--data_dir and --do_predict go with --task_name; with --train_file, drop them.")
    train, labels = read_classification_file(FLAGS.train_file, FLAGS.text_columns, FLAGS.label_column,
                                             FLAGS.label_names, FLAGS.on_error)
    if len(labels) < 2:
        raise ValueError(f"{FLAGS.train_file}: every label is {labels[0]!r}; a classifier needs two classes or more "
                         "(--label_names lists them all).")
    dev, _ = read_classification_file(FLAGS.eval_file, FLAGS.text_columns, FLAGS.label_column, labels,
                                      FLAGS.on_error)
    task = GlueTask(os.path.basename(FLAGS.train_file), tuple(FLAGS.text_columns), FLAGS.label_column, labels)
    logging.info("%s: classes %s", task.name, ", ".join(f"{i}={name}" for i, name in enumerate(labels)))
    return task, train, dev, None


def main(argv):
    del argv
    try:
        pooling = check_pooling(FLAGS.pooling)
    except ValueError as error:
        raise ValueError(f"--pooling={','.join(FLAGS.pooling)}: {error}") from None
    task, train, dev, test = read_data()
    label_names = _label_names(task)
    keras.utils.set_random_seed(FLAGS.seed)
    logging.info("%s: %d training and %d dev examples", task.name, len(train), len(dev))

    encoder, preprocessor = common.load_encoder()
    def train_batches():
        return text_dataset(
            _texts(train), train.labels, preprocessor=preprocessor, batch_size=FLAGS.train_batch_size, shuffle=True,
            seed=FLAGS.seed, num_classes=task.num_classes,
        )

    first_batches = train_batches()  # checks the labels before the model is built
    dev_batches = eval_batches(dev, preprocessor)
    model = BertClassifier(encoder, task.num_classes, pooling=pooling)
    if task.is_regression:
        loss, metrics = keras.losses.MeanSquaredError(), []
    else:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    model.compile(
        optimizer=common.optimizer_for(len(train)), loss=loss, metrics=metrics, **common.compile_options()
    )

    def to_predictions(logits):
        return logits[:, 0] if task.is_regression else np.argmax(logits, axis=-1)

    def evaluate():
        return glue_metrics(task, dev.labels, to_predictions(model.predict(dev_batches, verbose=0)))

    os.makedirs(FLAGS.output_dir, exist_ok=True)  # every input has been read and checked
    keep_best = common.fine_tune(model, train_batches, evaluate, task.metric_names[0], first_batches)

    model = keras.models.load_model(os.path.join(FLAGS.output_dir, common.BEST_MODEL_NAME), compile=False)
    logits = model.predict(dev_batches, verbose=0)
    results = glue_metrics(task, dev.labels, to_predictions(logits))
    common.write_json(os.path.join(FLAGS.output_dir, "eval_results.json"),
                      {"best": results, "epochs": keep_best.history})
    _write_predictions(os.path.join(FLAGS.output_dir, "dev_predictions.tsv"), dev, logits, label_names)
    if test is not None:
        test_logits = model.predict(eval_batches(test, preprocessor), verbose=0)
        _write_predictions(os.path.join(FLAGS.output_dir, "test_results.tsv"), test, test_logits,
                           None if task.is_regression else list(task.labels))
    if FLAGS.export_dir:
        export_saved_model(model, preprocessor, FLAGS.export_dir, labels=label_names, text_pair=task.is_pair)
        logging.info("Exported the SavedModel to %s", FLAGS.export_dir)
    logging.info("Best dev results: %s", results)


def _write_predictions(path: str, data: ClassificationData, logits: np.ndarray, names: list[str] | None) -> None:
    """`index<TAB>prediction` lines (GLUE's submission layout), plus the gold label if known.

    Classes are written as `names[class_id]`; regression values (`names` None) with 4 decimals.
    """
    def show(value) -> str:
        return f"{value:.4f}" if names is None else names[int(value)]

    lines = ["index\tprediction" + ("\tlabel" if data.labels is not None else "")]
    for n, row in enumerate(logits):
        line = f"{data.ids[n]}\t{show(row[0] if names is None else np.argmax(row))}"
        if data.labels is not None:
            line += f"\t{show(data.labels[n])}"
        lines.append(line)
    write_text_atomically(path, "\n".join(lines) + "\n")
    logging.info("Wrote %s", path)


run = functools.partial(common.run, main)

if __name__ == "__main__":
    run()
