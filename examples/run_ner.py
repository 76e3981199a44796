r"""Fine-tunes BERT for named-entity recognition on CoNLL-2003 style files.

    python examples/run_ner.py --train_file=eng.train --dev_file=eng.testa \
        --init_checkpoint=cased_L-12_H-768_A-12 --output_dir=/tmp/ner

Each word is labelled at its first word piece. After every epoch the entity-level F1 on
--dev_file is computed and the best model kept (`best_model.keras`, without optimizer state); then
`eval_results.json` and `predictions.txt` (`word gold predicted` per line, CoNLL layout) are
written. TensorBoard logs go to `logs/`; rerunning the same command after a kill resumes from
`backup/`. --max_steps=20 makes a smoke run.
"""

from __future__ import annotations

import functools
import os

import common
import keras
from absl import flags, logging

from keras_bert_lite.atomic import write_text_atomically
from keras_bert_lite.data.ner import (
    CONLL2003_TAGS,
    TaggedSentence,
    entity_f1,
    ner_dataset,
    predicted_tags,
    read_conll,
    word_positions,
)
from keras_bert_lite.export import export_saved_model
from keras_bert_lite.models.token_classifier import BertTokenClassifier

FLAGS = flags.FLAGS
flags.DEFINE_string("train_file", None, "CoNLL file to train on.")
flags.DEFINE_string("dev_file", None, "CoNLL file to evaluate and predict.")
flags.DEFINE_list("tags", list(CONLL2003_TAGS), "Tag set in class-id order (default: CoNLL-2003's); these are the "
                  "label names of the predictions and the exported model.")
flags.DEFINE_alias("label_names", "tags")
flags.mark_flags_as_required(["train_file", "dev_file"])
common.define_flags(max_seq_length=128, learning_rate=5e-5)
flags.adopt_module_key_flags(common)


def main(argv):
    del argv
    keras.utils.set_random_seed(FLAGS.seed)
    tags = list(FLAGS.tags)
    train = read_conll(FLAGS.train_file, tags=tags, on_error=FLAGS.on_error)
    dev = read_conll(FLAGS.dev_file, tags=tags, on_error=FLAGS.on_error)
    logging.info("%d training and %d dev sentences", len(train), len(dev))
    encoder, preprocessor = common.load_encoder()
    model = BertTokenClassifier(encoder, len(tags))
    model.compile(
        optimizer=common.optimizer_for(len(train)),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight"),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        **common.compile_options(),
    )
    positions = word_positions(dev, preprocessor)
    truncated = sum(int((p < 0).sum()) for p in positions)
    if truncated:
        logging.warning("%d dev words do not fit in %d tokens; they are predicted 'O'.", truncated,
                        FLAGS.max_seq_length)
    dev_ds = ner_dataset(dev, preprocessor, tags, FLAGS.eval_batch_size, is_training=False)

    def predict(current: keras.Model) -> list[list[str]]:
        return predicted_tags(current.predict(dev_ds, verbose=0), positions, tags)

    def evaluate():
        result = entity_f1([s.tags for s in dev], predict(model))
        return {k: v for k, v in result.items() if k != "per_type"}

    def train_batches():
        return ner_dataset(train, preprocessor, tags, FLAGS.train_batch_size, is_training=True, seed=FLAGS.seed)

    os.makedirs(FLAGS.output_dir, exist_ok=True)  # every input has been read and checked
    keep_best = common.fine_tune(model, train_batches, evaluate, "f1")

    model = keras.models.load_model(os.path.join(FLAGS.output_dir, common.BEST_MODEL_NAME), compile=False)
    predictions = predict(model)
    results = entity_f1([s.tags for s in dev], predictions)
    common.write_json(os.path.join(FLAGS.output_dir, "eval_results.json"), {"best": results, "epochs": keep_best.history})
    _write_predictions(os.path.join(FLAGS.output_dir, "predictions.txt"), dev, predictions)
    if FLAGS.export_dir:
        export_saved_model(model, preprocessor, FLAGS.export_dir, labels=tags)
        logging.info("Exported the SavedModel to %s", FLAGS.export_dir)
    logging.info("Best dev entity F1: %.4f", results["f1"])


def _write_predictions(path: str, sentences: list[TaggedSentence], predictions: list[list[str]]) -> None:
    blocks = [
        "".join(f"{word} {gold} {tag}\n" for word, gold, tag in zip(sentence.words, sentence.tags, predicted))
        for sentence, predicted in zip(sentences, predictions)
    ]
    write_text_atomically(path, "\n".join(blocks) + "\n")
    logging.info("Wrote %s", path)


run = functools.partial(common.run, main)

if __name__ == "__main__":
    run()
