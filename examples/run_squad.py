"""Fine-tunes BERT for extractive question answering on SQuAD v1.1 or v2.0.

    python examples/run_squad.py --train_file=train-v1.1.json --predict_file=dev-v1.1.json \
        --init_checkpoint=uncased_L-12_H-768_A-12 --output_dir=/tmp/squad

Long contexts are split into windows `--doc_stride` tokens apart; answers are chosen with the
paper's span scoring (n-best 20, at most 30 tokens) and mapped back to the original context.
Training runs through `common.fine_tune` (--max_steps, resume after a kill, TensorBoard logs in
--output_dir/logs). After every epoch the official EM/F1 are computed on --predict_file and the
best model is kept (`best_model.keras`, without optimizer state); then `predictions.json`, `nbest_predictions.json`, `null_odds.json` (v2.0)
and `eval_results.json` are written. With --export_dir, the SavedModel answers raw (question,
context) strings with the same windows and span scoring as the evaluation.
"""

from __future__ import annotations

import functools
import os

import common
import keras
from absl import flags, logging

from keras_bert_lite.data.squad import (
    SquadExample,
    SquadFeatures,
    predict_answers,
    read_squad,
    squad_dataset,
    squad_evaluate,
    squad_features,
)
from keras_bert_lite.export import export_saved_model
from keras_bert_lite.models.span_labeler import BertSpanLabeler

FLAGS = flags.FLAGS
flags.DEFINE_string("train_file", None, "SQuAD JSON to train on.")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to evaluate and predict.")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD 2.0: questions may have no answer.")
flags.DEFINE_integer("doc_stride", 128, "Tokens between the starts of consecutive context windows.")
flags.DEFINE_integer("max_query_length", 64, "Question tokens kept.")
flags.DEFINE_integer("n_best_size", 20, "Candidates per side and in the n-best list.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer in tokens.")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "SQuAD 2.0: answer '' above this null-score margin.")
flags.mark_flags_as_required(["train_file", "predict_file"])
common.define_flags(max_seq_length=384, learning_rate=5e-5)
flags.adopt_module_key_flags(common)


def features_for(examples: list[SquadExample], tokenizer) -> SquadFeatures:
    return squad_features(
        examples, tokenizer, FLAGS.max_seq_length, FLAGS.doc_stride, FLAGS.max_query_length, progress=True
    )


def answers_for(model: keras.Model, examples: list[SquadExample], features: SquadFeatures):
    outputs = model.predict(squad_dataset(features, FLAGS.eval_batch_size, is_training=False), verbose=0)
    return predict_answers(
        examples, features, outputs["start_logits"], outputs["end_logits"],
        n_best_size=FLAGS.n_best_size, max_answer_length=FLAGS.max_answer_length,
        version_2_with_negative=FLAGS.version_2_with_negative,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold,
    )


def main(argv):
    del argv
    keras.utils.set_random_seed(FLAGS.seed)
    train = read_squad(FLAGS.train_file, is_training=True, on_error=FLAGS.on_error, progress=True)
    dev = read_squad(FLAGS.predict_file, is_training=False, on_error=FLAGS.on_error, progress=True)
    encoder, preprocessor = common.load_encoder()
    train_features = features_for(train, preprocessor.tokenizer)
    dev_features = features_for(dev, preprocessor.tokenizer)
    logging.info("%d training questions (%d windows), %d dev questions (%d windows)",
                 len(train), len(train_features), len(dev), len(dev_features))

    model = BertSpanLabeler(encoder)
    model.compile(optimizer=common.optimizer_for(len(train_features)), **common.compile_options())

    def evaluate():
        return squad_evaluate(dev, answers_for(model, dev, dev_features).answers)

    def train_batches():
        return squad_dataset(train_features, FLAGS.train_batch_size, is_training=True, seed=FLAGS.seed)

    os.makedirs(FLAGS.output_dir, exist_ok=True)  # every input has been read and checked
    keep_best = common.fine_tune(model, train_batches, evaluate, "f1")

    model = keras.models.load_model(os.path.join(FLAGS.output_dir, common.BEST_MODEL_NAME), compile=False)
    predictions = answers_for(model, dev, dev_features)
    results = squad_evaluate(dev, predictions.answers)
    common.write_json(os.path.join(FLAGS.output_dir, "predictions.json"), predictions.answers)
    common.write_json(os.path.join(FLAGS.output_dir, "nbest_predictions.json"), predictions.nbest)
    if FLAGS.version_2_with_negative:
        common.write_json(os.path.join(FLAGS.output_dir, "null_odds.json"), predictions.null_odds)
    common.write_json(os.path.join(FLAGS.output_dir, "eval_results.json"), {"best": results, "epochs": keep_best.history})
    if FLAGS.export_dir:
        export_saved_model(
            model, preprocessor, FLAGS.export_dir, max_query_length=FLAGS.max_query_length,
            doc_stride=FLAGS.doc_stride, n_best_size=FLAGS.n_best_size, max_answer_length=FLAGS.max_answer_length,
            version_2_with_negative=FLAGS.version_2_with_negative,
            null_score_diff_threshold=FLAGS.null_score_diff_threshold,
        )
        logging.info("Exported the SavedModel to %s", FLAGS.export_dir)
    logging.info("Best dev results: %s", results)


run = functools.partial(common.run, main)

if __name__ == "__main__":
    run()
