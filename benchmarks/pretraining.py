"""Pre-training throughput of the distributed loop on this machine: steps/s and examples/s.

Runs `PretrainingLoop` (the code path of `tpu/pretrain.py`) on synthetic batches in BERT's
pre-training format for each preset at one sequence length, with and without XLA
(`jit_compile`), and prints a Markdown table. The first loop (tracing and compilation) is
timed separately and left out of the rates.

Usage:

    python benchmarks/pretraining.py                       # tiny, mini, base at seq 128
    python benchmarks/pretraining.py --presets=tiny --batch_size=64 --steps=50
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import time  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app, flags, logging  # noqa: E402
from tqdm import tqdm  # noqa: E402

from keras_bert_lite.config import PRESETS, BertConfig  # noqa: E402
from keras_bert_lite.models import BertEncoder, BertPretrainer  # noqa: E402
from keras_bert_lite.optimization import create_optimizer  # noqa: E402
from keras_bert_lite.training.pretraining_loop import PretrainingLoop  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("presets", ["tiny", "mini", "base"], f"Model presets, from {PRESETS}.")
flags.DEFINE_integer("seq_length", 128, "Sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence.")
flags.DEFINE_integer("vocab_size", 30522, "Vocabulary size (BERT's uncased vocab by default).")
flags.DEFINE_string("batch_sizes", "tiny=32,mini=32,base=8", "Global batch size per preset (preset=size,...).")
flags.DEFINE_integer("steps", 20, "Timed steps per configuration (after one warm-up loop).")
flags.DEFINE_integer("steps_per_loop", 10, "Steps per tf.function call.")
flags.DEFINE_list("xla", ["false", "true"], "jit_compile settings to compare.")


def synthetic_dataset(batch_size: int, seq_length: int, max_predictions: int, vocab_size: int) -> tf.data.Dataset:
    """Random batches with the shapes, dtypes and masking rate of real pre-training data."""
    rng = np.random.default_rng(0)
    n = 4 * batch_size
    ids = rng.integers(5, vocab_size, (n, seq_length), dtype=np.int32)
    features = {
        "input_word_ids": ids,
        "input_mask": np.ones_like(ids),
        "input_type_ids": (np.arange(seq_length)[None, :] >= seq_length // 2).astype(np.int32).repeat(n, 0),
        "masked_lm_positions": np.sort(rng.integers(1, seq_length, (n, max_predictions), dtype=np.int32), axis=1),
    }
    labels = {
        "masked_lm_ids": rng.integers(5, vocab_size, (n, max_predictions), dtype=np.int32),
        "masked_lm_weights": np.ones((n, max_predictions), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (n, 1), dtype=np.int32),
    }
    return tf.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(batch_size, drop_remainder=True)


def measure(preset: str, batch_size: int, jit_compile: bool) -> dict:
    """Compile time and steady steps/s of one configuration."""
    config = BertConfig.preset(preset, vocab_size=FLAGS.vocab_size)
    strategy = tf.distribute.get_strategy()
    pretrainer = BertPretrainer(BertEncoder(config))
    optimizer = create_optimizer(1e-4, num_train_steps=10_000, num_warmup_steps=100)
    loop = PretrainingLoop(strategy, pretrainer, optimizer, batch_size, jit_compile=jit_compile)
    dataset = synthetic_dataset(batch_size, FLAGS.seq_length, FLAGS.max_predictions_per_seq, FLAGS.vocab_size)
    iterator = iter(loop.distribute(lambda context: dataset))
    began = time.perf_counter()
    loop.train(iterator, FLAGS.steps_per_loop)
    first = time.perf_counter() - began
    began = time.perf_counter()
    done = 0
    while done < FLAGS.steps:
        n = min(FLAGS.steps_per_loop, FLAGS.steps - done)
        loop.train(iterator, n)
        done += n
    seconds = time.perf_counter() - began
    return dict(
        preset=preset, xla=jit_compile, batch=batch_size, params=pretrainer.count_params(),
        first=first, steps_per_second=done / seconds, examples_per_second=done * batch_size / seconds,
    )


def main(argv):
    del argv
    batch_sizes = dict(item.split("=") for item in FLAGS.batch_sizes.split(","))
    unknown = [p for p in FLAGS.presets if p not in PRESETS]
    if unknown:
        raise app.UsageError(f"Unknown preset(s) {unknown}; expected some of {PRESETS}.")
    settings = [(p, x.lower() == "true") for p in FLAGS.presets for x in FLAGS.xla]
    rows = []
    for preset, xla in tqdm(settings, desc="configurations"):
        rows.append(measure(preset, int(batch_sizes.get(preset, 8)), xla))
        logging.info("%s", rows[-1])
    print(f"\nPre-training, seq {FLAGS.seq_length}, vocab {FLAGS.vocab_size}, {os.cpu_count()} CPU cores, "
          f"TensorFlow {tf.__version__}, {FLAGS.steps} timed steps:\n")
    print("| preset | params | XLA | batch | first loop (s) | steps/s | examples/s |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['preset']} | {r['params'] / 1e6:.1f}M | {'on' if r['xla'] else 'off'} | {r['batch']} | "
              f"{r['first']:.1f} | {r['steps_per_second']:.2f} | {r['examples_per_second']:.1f} |")


if __name__ == "__main__":
    app.run(main)
