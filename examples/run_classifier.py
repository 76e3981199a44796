"""Fine-tunes BERT on a GLUE task (sentence or sentence-pair classification, or STS-B regression).

    python examples/run_classifier.py --task_name=mrpc --data_dir=glue_data/MRPC \
        --init_checkpoint=uncased_L-12_H-768_A-12 --output_dir=/tmp/mrpc

Trains with `model.fit` (progress bar), evaluates the task's GLUE metrics on the dev file after
every epoch, keeps the best model (`best_model.keras`), then writes `eval_results.json`,
`dev_predictions.tsv` and, with --do_predict, `test_results.tsv` (GLUE submission layout).
"""

from __future__ import annotations

import os

import common
import keras
import numpy as np
from absl import flags, logging

from keras_bert_lite.data.glue import (
    ClassificationData,
    classification_dataset,
    get_glue_task,
    glue_metrics,
    read_glue_tsv,
)
from keras_bert_lite.export import export_saved_model
from keras_bert_lite.models.classifier import BertClassifier

FLAGS = flags.FLAGS
flags.DEFINE_string("task_name", None, "GLUE task: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli.")
flags.DEFINE_string("data_dir", None, "Folder with the task's train.tsv, dev file and test file.")
flags.DEFINE_bool("do_predict", False, "Also predict the test file.")
flags.mark_flags_as_required(["task_name", "data_dir"])
common.define_flags(max_seq_length=128, learning_rate=2e-5)


def predict(model: keras.Model, data: ClassificationData, preprocessor) -> np.ndarray:
    """Logits [N, num_classes] for `data`, in order."""
    dataset = classification_dataset(data, preprocessor, FLAGS.eval_batch_size, is_training=False)
    return model.predict(dataset, verbose=0)


def main(argv):
    del argv
    task = get_glue_task(FLAGS.task_name)
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    keras.utils.set_random_seed(FLAGS.seed)
    train = read_glue_tsv(os.path.join(FLAGS.data_dir, "train.tsv"), task, "train", FLAGS.on_error)
    dev = read_glue_tsv(os.path.join(FLAGS.data_dir, task.dev_file), task, "dev", FLAGS.on_error)
    logging.info("%s: %d training and %d dev examples", task.name, len(train), len(dev))

    encoder, preprocessor = common.load_encoder()
    model = BertClassifier(encoder, task.num_classes)
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
        return glue_metrics(task, dev.labels, to_predictions(predict(model, dev, preprocessor)))

    best_path = os.path.join(FLAGS.output_dir, "best_model.keras")
    keep_best = common.KeepBest(evaluate, task.metric_names[0], best_path)
    train_ds = classification_dataset(
        train, preprocessor, FLAGS.train_batch_size, is_training=True,
        num_classes=task.num_classes, seed=FLAGS.seed,
    )
    model.fit(train_ds, epochs=FLAGS.num_train_epochs, callbacks=[keep_best], verbose=1)

    model = keras.models.load_model(best_path, compile=False)
    logits = predict(model, dev, preprocessor)
    results = glue_metrics(task, dev.labels, to_predictions(logits))
    common.write_json(os.path.join(FLAGS.output_dir, "eval_results.json"), {"best": results, "epochs": keep_best.history})
    _write_predictions(os.path.join(FLAGS.output_dir, "dev_predictions.tsv"), task, dev, logits)
    if FLAGS.do_predict:
        test = read_glue_tsv(os.path.join(FLAGS.data_dir, task.test_file), task, "test", FLAGS.on_error)
        _write_predictions(os.path.join(FLAGS.output_dir, "test_results.tsv"), task, test,
                           predict(model, test, preprocessor))
    if FLAGS.export_dir:
        export_saved_model(model, preprocessor, FLAGS.export_dir, labels=task.labels, text_pair=task.is_pair)
        logging.info("Exported the SavedModel to %s", FLAGS.export_dir)
    logging.info("Best dev results: %s", results)


def _write_predictions(path: str, task, data: ClassificationData, logits: np.ndarray) -> None:
    """`index<TAB>prediction` lines (GLUE's submission layout), plus the gold label if known."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("index\tprediction" + ("\tlabel" if data.labels is not None else "") + "\n")
        for n, row in enumerate(logits):
            prediction = f"{row[0]:.4f}" if task.is_regression else task.labels[int(np.argmax(row))]
            line = f"{data.ids[n]}\t{prediction}"
            if data.labels is not None:
                gold = data.labels[n]
                line += f"\t{gold:.4f}" if task.is_regression else f"\t{task.labels[gold]}"
            f.write(line + "\n")
    logging.info("Wrote %s", path)


if __name__ == "__main__":
    common.run(main)
