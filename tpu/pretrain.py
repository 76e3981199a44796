"""Pre-trains BERT (masked LM + next-sentence prediction) on a CPU, GPUs, a cluster or a TPU.

The same code runs everywhere: a `tf.distribute` strategy from --strategy and the distributed
custom loop of `keras_bert_lite.training` (`strategy.run` inside a `tf.function` of
--steps_per_loop steps), checkpoints that survive a kill (rerun the same command to resume),
TensorBoard scalars and a progress bar.

With no flags this is the main job: it builds a WordPiece vocabulary from the built-in Python
standard-library documentation corpus, writes pre-training TFRecords (holding out every tenth
document), pre-trains a `tiny` BERT on the CPU in a few minutes, evaluates MLM/NSP accuracy on
the held-out documents against the most-frequent-label baselines, prints the top predictions
for a few masked sentences, and writes everything under --output_dir: vocab.txt, data/,
checkpoints/, summaries/ (TensorBoard), pretrainer.keras, encoder.keras, bert_config.json and
metrics.json.

Usage:

    python tpu/pretrain.py                                   # the main job
    python tpu/pretrain.py --strategy=tpu --tpu=my-tpu \\
        --input_files='gs://bucket/data/*.tfrecord' --vocab_file=gs://bucket/vocab.txt \\
        --bert_config_file=gs://bucket/bert_config.json --train_batch_size=256 \\
        --num_train_steps=1000000 --num_warmup_steps=10000 --learning_rate=1e-4 \\
        --steps_per_loop=1000 --output_dir=gs://bucket/run1
    # each worker of a cluster, with TF_CONFIG set:
    python tpu/pretrain.py --strategy=multi_worker --input_files=... --output_dir=/shared/run1
"""

from __future__ import annotations

import os

# Before TensorFlow is imported: oneDNN kernels on (TensorFlow leaves them off on some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import json  # noqa: E402
import sys  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app, flags, logging  # noqa: E402

from keras_bert_lite.config import PRESETS, BertConfig  # noqa: E402
from keras_bert_lite.data.corpora import builtin_documents, expand_file_patterns  # noqa: E402
from keras_bert_lite.data.pretraining_reader import pretraining_dataset  # noqa: E402
from keras_bert_lite.data.pretraining_writer import create_pretraining_data  # noqa: E402
from keras_bert_lite.models import BertEncoder, BertPretrainer  # noqa: E402
from keras_bert_lite.text.preprocessor import BertPreprocessor  # noqa: E402
from keras_bert_lite.text.tokenizer import load_vocabulary  # noqa: E402
from keras_bert_lite.text.vocab import build_vocab  # noqa: E402
from keras_bert_lite.training.checkpointing import export_pretrained, restore_model_weights  # noqa: E402
from keras_bert_lite.training.distribute import STRATEGIES, get_strategy  # noqa: E402
from keras_bert_lite.training.optimization import OPTIMIZER_TYPES, create_optimizer  # noqa: E402
from keras_bert_lite.training.pretraining import CHECKPOINT_SUBDIR, run_pretraining  # noqa: E402
from keras_bert_lite.training.pretraining_loop import PretrainingLoop  # noqa: E402

FLAGS = flags.FLAGS

# Input.
flags.DEFINE_string("input_files", None, "Pre-training TFRecords in the original BERT format: globs, comma-separated. "
                    "Default: build data from the built-in standard-library documentation corpus.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt (required with --input_files; built from the corpus "
                    "otherwise).")
flags.DEFINE_bool("do_lower_case", True, "Lower-case text (uncased vocabulary); built-in corpus only.")
flags.DEFINE_integer("vocab_size", 2000, "Size of the vocabulary built from the built-in corpus.")
flags.DEFINE_integer("max_documents", 0, "Built-in corpus: use only the first N documents (0: all).")
flags.DEFINE_integer("dupe_factor", 2, "Built-in corpus: passes over the training documents, each with new masks.")
flags.DEFINE_bool("dynamic_masking", False, "Draw new masks every time an example is read.")
# Model.
flags.DEFINE_string("bert_config_file", None, "Google bert_config.json; overrides --model.")
flags.DEFINE_enum("model", "tiny", PRESETS, "Model preset (its vocab_size is taken from the vocabulary).")
flags.DEFINE_string("init_checkpoint", None, "Initial weights: a checkpoint of this script, a .keras file, or a "
                    "Google BERT checkpoint. Ignored when --output_dir already has checkpoints (resume).")
# Training.
flags.DEFINE_integer("train_batch_size", 32, "Global batch size (over all replicas and accumulation steps).")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example (as the data was written with).")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per example (as the data was written with).")
flags.DEFINE_integer("num_train_steps", 600, "Optimizer steps.")
flags.DEFINE_integer("num_warmup_steps", 60, "Linear warmup steps.")
flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate (BERT: 1e-4 at batch 256).")
flags.DEFINE_enum("optimizer", "adamw", OPTIMIZER_TYPES, "AdamW (BERT) or LAMB (large batches).")
flags.DEFINE_integer("gradient_accumulation_steps", 1, "Micro-batches per step; the update equals one step on "
                     "the whole global batch.")
flags.DEFINE_integer("seed", 12345, "Seed of weights, data creation and shuffling.")
# Devices.
flags.DEFINE_enum("strategy", "default", STRATEGIES, "Distribution strategy.")
flags.DEFINE_string("tpu", None, "TPU name, 'local' on a TPU VM, or grpc://host:port (--strategy=tpu).")
flags.DEFINE_integer("num_gpus", None, "Local GPUs for --strategy=mirrored/one_device (default: all).")
flags.DEFINE_enum("all_reduce", "auto", ["auto", "ring", "nccl"], "Collective for --strategy=multi_worker.")
flags.DEFINE_enum("mixed_precision", "auto", ["auto", "float32", "mixed_float16", "mixed_bfloat16"],
                  "Compute dtype; auto: mixed_bfloat16 on TPU, mixed_float16 (with loss scaling) on GPU, "
                  "float32 on CPU. LayerNorm and softmax stay float32.")
flags.DEFINE_enum("jit_compile", "auto", ["auto", "true", "false"], "XLA for the training step; auto: on for GPUs "
                  "(TPUs always compile), off on CPUs, where it measured no faster (benchmarks/).")
flags.DEFINE_integer("steps_per_loop", 50, "Steps per tf.function call (one host round trip; 1000 on TPUs).")
# Output.
flags.DEFINE_string("output_dir", "output/pretrain", "Everything is written here; rerun to resume.")
flags.DEFINE_integer("save_checkpoints_steps", 200, "Checkpoint interval in steps.")
flags.DEFINE_integer("keep_checkpoint_max", 3, "Newest checkpoints kept.")
flags.DEFINE_integer("num_examples_to_show", 4, "Masked held-out sentences whose top predictions are printed.")

HELDOUT_EVERY = 10  # built-in corpus: documents 0, 10, 20, ... are held out for evaluation
TOP_K = 5


def builtin_corpus_data(output_dir: str) -> tuple[str, str, str, list[str]]:
    """Vocabulary and train/held-out TFRecords from the built-in corpus, reused when present.

    Returns:
        (vocab_file, train_pattern, eval_pattern, held-out sentences to show predictions for).
    """
    data_dir = os.path.join(output_dir, "data")
    settings = dict(
        max_documents=FLAGS.max_documents, vocab_size=FLAGS.vocab_size, vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq, dupe_factor=FLAGS.dupe_factor, seed=FLAGS.seed,
    )
    manifest_file = os.path.join(data_dir, "manifest.json")
    vocab_file = FLAGS.vocab_file or os.path.join(output_dir, "vocab.txt")
    train_pattern = os.path.join(data_dir, "train-*.tfrecord")
    eval_pattern = os.path.join(data_dir, "heldout.tfrecord")
    if tf.io.gfile.exists(manifest_file):
        manifest = json.loads(tf.io.gfile.GFile(manifest_file).read())
        if manifest["settings"] == settings:
            logging.info("Reusing the vocabulary and data in %s.", data_dir)
            return vocab_file, train_pattern, eval_pattern, manifest["sentences"]
    if tf.io.gfile.exists(os.path.join(output_dir, CHECKPOINT_SUBDIR)):
        raise ValueError(
            f"{output_dir} has checkpoints but its data was made with other settings (or is incomplete); "
            "use a new --output_dir or the same flags as before."
        )
    documents = builtin_documents()
    if FLAGS.max_documents > 0:
        documents = documents[: FLAGS.max_documents]
    heldout = documents[::HELDOUT_EVERY]
    train = [d for i, d in enumerate(documents) if i % HELDOUT_EVERY]
    if not FLAGS.vocab_file:
        sentences = [s for d in train for s in d]
        logging.info("Building a %d-token WordPiece vocabulary from %d sentences.", FLAGS.vocab_size, len(sentences))
        tf.io.gfile.makedirs(output_dir)
        build_vocab(sentences, vocab_size=FLAGS.vocab_size, lower_case=FLAGS.do_lower_case, output_file=vocab_file)
    common = dict(lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
                  max_predictions_per_seq=FLAGS.max_predictions_per_seq, seed=FLAGS.seed, progress=True)
    create_pretraining_data(train, vocab_file, [os.path.join(data_dir, f"train-{i}.tfrecord") for i in range(4)],
                            dupe_factor=FLAGS.dupe_factor, **common)
    create_pretraining_data(heldout, vocab_file, [eval_pattern], dupe_factor=1, **common)
    sentences = [d[len(d) // 2] for d in heldout]
    with tf.io.gfile.GFile(manifest_file + ".partial", "w") as f:  # written last: marks the data complete
        f.write(json.dumps(dict(settings=settings, sentences=sentences)))
    tf.io.gfile.rename(manifest_file + ".partial", manifest_file, overwrite=True)
    return vocab_file, train_pattern, eval_pattern, sentences


def precision_policy(strategy: tf.distribute.Strategy) -> str:
    """The --mixed_precision policy, resolving "auto" from the devices."""
    if FLAGS.mixed_precision != "auto":
        return FLAGS.mixed_precision
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return "mixed_bfloat16"
    return "mixed_float16" if tf.config.list_logical_devices("GPU") else "float32"


def model_config(vocab_size: int) -> BertConfig:
    """The model config from --bert_config_file or --model, checked against the data."""
    if FLAGS.bert_config_file:
        config = BertConfig.from_json_file(FLAGS.bert_config_file)
        if config.vocab_size < vocab_size:
            raise ValueError(f"{FLAGS.bert_config_file}: vocab_size {config.vocab_size} is smaller than the "
                                 f"vocabulary ({vocab_size} tokens).")
    else:
        config = BertConfig.preset(FLAGS.model, vocab_size=vocab_size)
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise ValueError(f"--max_seq_length {FLAGS.max_seq_length} exceeds max_position_embeddings "
                             f"{config.max_position_embeddings}.")
    return config


def label_counts(pattern: str) -> tuple[np.ndarray, np.ndarray]:
    """Masked-token id counts and NSP label counts over TFRecords (read once)."""
    dataset = pretraining_dataset(pattern, 256, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
                                  is_training=False, drop_remainder=False)
    tokens, nsp = np.zeros(0, np.int64), np.zeros(2, np.int64)
    for _, labels in dataset.as_numpy_iterator():
        ids = labels["masked_lm_ids"][labels["masked_lm_weights"] > 0]
        tokens = np.pad(tokens, (0, max(0, ids.max(initial=0) + 1 - len(tokens))))
        tokens += np.bincount(ids, minlength=len(tokens))
        nsp += np.bincount(labels["next_sentence_labels"].ravel(), minlength=2)
    return tokens, nsp


def baselines(train_pattern: str, eval_pattern: str) -> dict[str, float]:
    """Held-out accuracy of always predicting the training data's most frequent label."""
    train_tokens, train_nsp = label_counts(train_pattern)
    eval_tokens, eval_nsp = label_counts(eval_pattern)
    top_token = int(np.argmax(train_tokens))
    return dict(
        most_frequent_token_id=top_token,
        mlm_accuracy=float(eval_tokens[top_token] / eval_tokens.sum()) if top_token < len(eval_tokens) else 0.0,
        nsp_accuracy=float(eval_nsp[int(np.argmax(train_nsp))] / eval_nsp.sum()),
        eval_masked_tokens=int(eval_tokens.sum()),
        eval_examples=int(eval_nsp.sum()),
    )


def masked_examples(pretrainer: BertPretrainer, vocab_file: str, sentences: list[str]) -> list[dict]:
    """Masks the middle whole word of each sentence and returns the top predictions for it."""
    if not sentences:
        return []
    preprocessor = BertPreprocessor(vocab_file, seq_length=FLAGS.max_seq_length, lower_case=FLAGS.do_lower_case)
    tokenizer = preprocessor.tokenizer
    inputs = {k: v.numpy() for k, v in preprocessor(tf.constant(sentences)).items()}
    shown = []
    for row in range(len(sentences)):
        ids = inputs["input_word_ids"][row]
        tokens = [tokenizer.id_to_token(i) for i in ids[: int(inputs["input_mask"][row].sum())]]
        words = [i for i in range(1, len(tokens) - 1) if tokens[i].isalpha() and len(tokens[i]) > 2
                 and not tokens[i + 1].startswith("##")]
        if not words:
            continue
        position = words[len(words) // 2]
        features = {name: values[row: row + 1].copy() for name, values in inputs.items()}
        features["input_word_ids"][0, position] = tokenizer.mask_id
        features["masked_lm_positions"] = np.array([[position]], np.int32)
        logits = pretrainer(features, training=False)["mlm_logits"].numpy()[0, 0]
        probabilities = tf.nn.softmax(logits).numpy()
        top = np.argsort(-probabilities)[:TOP_K]
        shown.append(dict(
            text=" ".join(tokens[1:position] + ["[MASK]"] + tokens[position + 1: -1]).replace(" ##", ""),
            answer=tokens[position],
            predictions=[(tokenizer.id_to_token(i), float(probabilities[i])) for i in top],
        ))
    return shown


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    # The strategy comes first: multi-worker and TPU set-up must precede every other TF op.
    strategy = get_strategy(FLAGS.strategy, tpu_address=FLAGS.tpu, num_gpus=FLAGS.num_gpus,
                            all_reduce=FLAGS.all_reduce)
    chief = strategy.extended.should_checkpoint
    output_dir = FLAGS.output_dir
    sentences, eval_pattern = [], None
    if FLAGS.input_files:
        if not FLAGS.vocab_file:
            raise ValueError("--input_files needs --vocab_file (the vocabulary the data was written with).")
        expand_file_patterns(FLAGS.input_files)  # fails now, naming the pattern, if one matches nothing
        vocab_file, train_pattern = FLAGS.vocab_file, FLAGS.input_files
    else:
        vocab_file, train_pattern, eval_pattern, sentences = builtin_corpus_data(output_dir)
    vocab_size = len(load_vocabulary(vocab_file))
    config = model_config(vocab_size)
    policy = precision_policy(strategy)
    keras.config.set_dtype_policy(policy)
    keras.utils.set_random_seed(FLAGS.seed)
    jit_compile = FLAGS.jit_compile == "true" or (
        FLAGS.jit_compile == "auto" and bool(tf.config.list_logical_devices("GPU")))
    logging.info("Model %s, %s, %d replica(s), precision %s, XLA %s.", config, type(strategy).__name__,
                 strategy.num_replicas_in_sync, policy, jit_compile)
    with strategy.scope():
        pretrainer = BertPretrainer(BertEncoder(config))
        optimizer = create_optimizer(FLAGS.learning_rate, FLAGS.num_train_steps, FLAGS.num_warmup_steps,
                                     optimizer_type=FLAGS.optimizer)
        if policy == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    if FLAGS.init_checkpoint and not tf.io.gfile.exists(os.path.join(output_dir, CHECKPOINT_SUBDIR)):
        kind = restore_model_weights(pretrainer, FLAGS.init_checkpoint)
        logging.info("Initialised from %s (%s).", FLAGS.init_checkpoint, kind)
    loop = PretrainingLoop(strategy, pretrainer, optimizer, FLAGS.train_batch_size,
                           gradient_accumulation_steps=FLAGS.gradient_accumulation_steps, jit_compile=jit_compile)

    def dataset_fn(context: tf.distribute.InputContext, start_step: int) -> tf.data.Dataset:
        return pretraining_dataset(
            train_pattern, FLAGS.train_batch_size, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
            dynamic_masking=FLAGS.dynamic_masking, vocabulary=vocab_file if FLAGS.dynamic_masking else None,
            seed=FLAGS.seed + start_step, input_context=context,
        )

    result = run_pretraining(loop, dataset_fn, FLAGS.num_train_steps, output_dir,
                             steps_per_loop=FLAGS.steps_per_loop, save_checkpoints_steps=FLAGS.save_checkpoints_steps,
                             keep_checkpoint_max=FLAGS.keep_checkpoint_max)
    metrics = dict(train=result, model=config.to_dict(), precision=policy, replicas=strategy.num_replicas_in_sync)
    if eval_pattern:
        metrics.update(evaluate(loop, vocab_file, train_pattern, eval_pattern, sentences))
    if chief:
        metrics["files"] = export_pretrained(pretrainer, output_dir, vocab_file)
        path = os.path.join(output_dir, "metrics.json")
        with tf.io.gfile.GFile(path + ".partial", "w") as f:
            f.write(json.dumps(metrics, indent=2) + "\n")
        tf.io.gfile.rename(path + ".partial", path, overwrite=True)
        logging.info("Wrote %s.", path)


def evaluate(loop: PretrainingLoop, vocab_file: str, train_pattern: str, eval_pattern: str,
             sentences: list[str]) -> dict:
    """Held-out MLM/NSP accuracy against the baselines, and top predictions for masked sentences."""
    reference = baselines(train_pattern, eval_pattern)
    steps = reference["eval_examples"] // FLAGS.train_batch_size
    if steps < 1:
        raise ValueError(f"The held-out data has {reference['eval_examples']} examples, fewer than one batch "
                             f"({FLAGS.train_batch_size}); use more --max_documents.")
    iterator = iter(loop.distribute(lambda context: pretraining_dataset(
        eval_pattern, FLAGS.train_batch_size, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
        is_training=False, input_context=context)))
    heldout_metrics = loop.evaluate(iterator, steps)
    shown = masked_examples(loop.model, vocab_file, sentences[: FLAGS.num_examples_to_show])
    if not loop.strategy.extended.should_checkpoint:
        return dict(heldout=heldout_metrics, baseline=reference, masked_examples=shown)
    print(f"\nHeld-out documents ({steps * FLAGS.train_batch_size} examples):")
    print(f"  MLM accuracy {heldout_metrics['mlm_accuracy']:.4f}  (most-frequent-token baseline "
          f"{reference['mlm_accuracy']:.4f})")
    print(f"  NSP accuracy {heldout_metrics['nsp_accuracy']:.4f}  (majority-label baseline "
          f"{reference['nsp_accuracy']:.4f})")
    print(f"  MLM loss {heldout_metrics['mlm_loss']:.4f}, NSP loss {heldout_metrics['nsp_loss']:.4f}")
    for example in shown:
        predictions = ", ".join(f"{token} ({p:.2f})" for token, p in example["predictions"])
        print(f"\n  {example['text']}\n    answer: {example['answer']}   top-{TOP_K}: {predictions}")
    print()
    return dict(heldout=heldout_metrics, baseline=reference, masked_examples=shown)


def run() -> None:
    """Runs `main`, turning bad input into one clear error line."""
    try:
        app.run(main)
    except (ValueError, FileNotFoundError, RuntimeError, FloatingPointError) as e:
        print(f"pretrain.py: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    run()
