"""Distributed pre-training jobs run in subprocesses by the tests, plus their shared helpers.

Usage:
    python jobs.py mirrored OUT_JSON        # 2 logical CPUs: MirroredStrategy vs one device
    python jobs.py worker OUT_DIR           # one MultiWorkerMirroredStrategy worker (TF_CONFIG set)

The helpers (`tiny_config`, `synthetic_examples`, `dataset_fn`, `build`) are also imported by
the in-process tests through conftest.py.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_bert_lite.config import BertConfig  # noqa: E402
from keras_bert_lite.models import BertEncoder, BertPretrainer  # noqa: E402
from keras_bert_lite.optimization import create_optimizer  # noqa: E402
from keras_bert_lite.training.pretraining_loop import PretrainingLoop  # noqa: E402

VOCAB, SEQ, PREDICTIONS = 120, 16, 4


def tiny_config(dropout: float = 0.0) -> BertConfig:
    """A one-layer BERT small enough to trace in seconds."""
    return BertConfig.preset("tiny", vocab_size=VOCAB, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                             num_hidden_layers=1, max_position_embeddings=SEQ,
                             hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)


def synthetic_examples(n: int, seed: int = 0) -> tuple[dict, dict]:
    """n random pre-training examples with padding and a varying number of masked positions."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(SEQ // 2, SEQ + 1, n)
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int32)
    features = {
        "input_word_ids": rng.integers(5, VOCAB, (n, SEQ)).astype(np.int32) * mask,
        "input_mask": mask,
        "input_type_ids": ((np.arange(SEQ)[None, :] >= lengths[:, None] // 2) * mask).astype(np.int32),
        "masked_lm_positions": rng.integers(1, SEQ // 2, (n, PREDICTIONS)).astype(np.int32),
    }
    labels = {
        "masked_lm_ids": rng.integers(5, VOCAB, (n, PREDICTIONS)).astype(np.int32),
        "masked_lm_weights": (rng.random((n, PREDICTIONS)) < 0.7).astype(np.float32),
        "next_sentence_labels": rng.integers(0, 2, (n, 1)).astype(np.int32),
    }
    return features, labels


def dataset_fn(examples: tuple[dict, dict], global_batch_size: int):
    """`dataset_fn(context, start_step)` over fixed examples in order: every strategy sees the
    same global batches, input pipeline i taking the i-th slice of each, split into replicas."""

    def make(context: tf.distribute.InputContext, start_step: int = 0) -> tf.data.Dataset:
        per_pipeline = global_batch_size // context.num_input_pipelines
        first = context.input_pipeline_id * per_pipeline
        dataset = tf.data.Dataset.from_tensor_slices(examples).repeat()
        dataset = dataset.batch(global_batch_size, drop_remainder=True).skip(start_step)
        dataset = dataset.map(lambda *batch: tf.nest.map_structure(lambda t: t[first: first + per_pipeline], batch))
        return dataset.rebatch(context.get_per_replica_batch_size(global_batch_size))

    return make


def build(strategy, global_batch_size: int, seed: int = 1, init_lr: float = 1e-2, num_train_steps: int = 20,
          **loop_kwargs) -> PretrainingLoop:
    """A seeded tiny pretrainer, BERT's optimizer and the loop, under `strategy`."""
    keras.utils.set_random_seed(seed)
    with strategy.scope():
        pretrainer = BertPretrainer(BertEncoder(tiny_config()))
        optimizer = create_optimizer(init_lr, num_train_steps=num_train_steps, num_warmup_steps=2)
    return PretrainingLoop(strategy, pretrainer, optimizer, global_batch_size, **loop_kwargs)


def mirrored_vs_single(out_json: str) -> None:
    """Trains the same model on the same global batches on one device and on two; saves both."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    examples = synthetic_examples(64)
    results = {}
    for name, strategy in (("single", tf.distribute.get_strategy()),
                           ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))):
        loop = build(strategy, 16)
        iterator = iter(loop.distribute(dataset_fn(examples, 16)))
        history = loop.train(iterator, 6)
        results[name] = dict(
            replicas=strategy.num_replicas_in_sync,
            loss=history["loss"].tolist(),
            gradient_norm=history["gradient_norm"].tolist(),
            weights=[w.tolist() for w in loop.model.get_weights()],
        )
    with open(out_json, "w") as f:
        json.dump(results, f)


def worker(out_dir: str) -> None:
    """One MultiWorkerMirroredStrategy worker of `run_pretraining`; saves its final weights."""
    from keras_bert_lite.training.distribute import get_strategy
    from keras_bert_lite.training.pretraining_driver import run_pretraining

    strategy = get_strategy("multi_worker")
    task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    loop = build(strategy, 16)
    result = run_pretraining(loop, dataset_fn(synthetic_examples(64), 16), num_train_steps=6,
                             model_dir=os.path.join(out_dir, "model"), steps_per_loop=3,
                             save_checkpoints_steps=3, progress=False)
    np.savez(os.path.join(out_dir, f"worker{task}.npz"), *loop.model.get_weights())
    with open(os.path.join(out_dir, f"worker{task}.json"), "w") as f:
        json.dump(dict(result, replicas=strategy.num_replicas_in_sync), f)


if __name__ == "__main__":
    {"mirrored": mirrored_vs_single, "worker": worker}[sys.argv[1]](sys.argv[2])
