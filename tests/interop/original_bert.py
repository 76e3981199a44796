"""Runs Google's ORIGINAL BERT code (PyPI bert-tensorflow 1.0.4) as a reference, in TF1 graph mode.

Usage: python original_bert.py JOBS_JSON

The original `modeling.py` and `run_pretraining.py` import `tf.contrib` layer norm and call
`tf.layers.dense`, neither of which exists in TensorFlow 2 with Keras 3. A copy of the installed
package is written next to JOBS_JSON with exactly those two calls swapped for compat.v1
equivalents that create the same variables (`LayerNorm/beta`, `LayerNorm/gamma`, `dense/kernel`,
`dense/bias`) and compute the same function (contrib's layer norm uses epsilon 1e-12). Everything
else is the original code.

JOBS_JSON holds a list of jobs:
  {"job": "restore", "config_file": bert_config.json, "checkpoint": prefix, "inputs": npz, "output": npz}
      reads the config with the original BertConfig.from_json_file, builds the original BertModel,
      restores it with tf.train.init_from_checkpoint and saves sequence_output, pooled_output and
      every layer's output.
  {"job": "pretrain", "config": {...}, "checkpoint": prefix, "inputs": npz, "output": npz,
   "seed": int}
      builds BertModel + run_pretraining's get_masked_lm_output / get_next_sentence_output +
      optimization.create_optimizer, randomises every variable, takes one training step, saves
      the checkpoint with a Saver (Adam slots and global_step included) and saves the outputs
      including the MLM and NSP logits.
"""

import importlib.util
import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

_COMPAT = '''"""compat.v1 stand-ins for tf.contrib.layers.layer_norm and tf.layers.dense."""
import tensorflow.compat.v1 as tf


def layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None):
  assert begin_norm_axis == -1 and begin_params_axis == -1
  with tf.variable_scope(scope, default_name="LayerNorm"):
    shape = inputs.shape[-1:]
    beta = tf.get_variable("beta", shape=shape, initializer=tf.zeros_initializer())
    gamma = tf.get_variable("gamma", shape=shape, initializer=tf.ones_initializer())
    mean, variance = tf.nn.moments(inputs, [-1], keepdims=True)
    return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)


def dense(inputs, units, activation=None, kernel_initializer=None, name=None):
  with tf.variable_scope(name, default_name="dense"):
    kernel = tf.get_variable("kernel", shape=[inputs.shape[-1], units], initializer=kernel_initializer)
    bias = tf.get_variable("bias", shape=[units], initializer=tf.zeros_initializer())
    outputs = tf.nn.bias_add(tf.matmul(inputs, kernel), bias)
    return activation(outputs) if activation is not None else outputs
'''

# (file, original text, replacement, expected count)
_PATCHES = [
    ("modeling.py", "from tensorflow.contrib import layers as contrib_layers",
     "from bert import tf1_compat as contrib_layers", 1),
    ("modeling.py", "tf.layers.dense(", "contrib_layers.dense(", 1),
    ("run_pretraining.py", "from bert import optimization",
     "from bert import optimization\nfrom bert import tf1_compat", 1),
    ("run_pretraining.py", "tf.layers.dense(", "tf1_compat.dense(", 1),
]


def install_patched_bert(directory: pathlib.Path) -> None:
    """Writes the patched copy of the original package to directory/bert and imports from it."""
    original = pathlib.Path(importlib.util.find_spec("bert").origin).parent
    package = directory / "bert"
    package.mkdir(parents=True, exist_ok=True)
    sources = {name: (original / name).read_text() for name in ("modeling.py", "run_pretraining.py", "optimization.py")}
    for name, old, new, count in _PATCHES:
        found = sources[name].count(old)
        if found != count:
            raise RuntimeError(f"original {name}: expected {count} x {old!r}, found {found}")
        sources[name] = sources[name].replace(old, new)
    for name, text in sources.items():
        (package / name).write_text(text)
    (package / "tf1_compat.py").write_text(_COMPAT)
    (package / "__init__.py").write_text("")
    sys.path.insert(0, str(directory))


def _feed(model_inputs, arrays):
    return {tensor: arrays[name] for name, tensor in model_inputs.items()}


def _bert_model(tf, modeling, bert_config, arrays):
    placeholders = {
        name: tf.placeholder(tf.int32, arrays[name].shape, name=name)
        for name in ("input_ids", "input_mask", "segment_ids")
    }
    model = modeling.BertModel(
        config=bert_config,
        is_training=False,
        input_ids=placeholders["input_ids"],
        input_mask=placeholders["input_mask"],
        token_type_ids=placeholders["segment_ids"],
        use_one_hot_embeddings=False,
    )
    fetches = {
        "sequence_output": model.get_sequence_output(),
        "pooled_output": model.get_pooled_output(),
    }
    for i, layer in enumerate(model.get_all_encoder_layers()):
        fetches[f"layer_{i}"] = layer
    return model, placeholders, fetches


def restore(job, tf, modeling):
    import numpy as np

    arrays = dict(np.load(job["inputs"]))
    with tf.Graph().as_default():
        bert_config = modeling.BertConfig.from_json_file(job["config_file"])
        _, placeholders, fetches = _bert_model(tf, modeling, bert_config, arrays)
        tvars = tf.trainable_variables()
        assignment_map, initialized = modeling.get_assignment_map_from_checkpoint(tvars, job["checkpoint"])
        not_restored = [v.name for v in tvars if v.name not in initialized]
        if not_restored:
            raise RuntimeError(f"variables not in the checkpoint: {not_restored}")
        tf.train.init_from_checkpoint(job["checkpoint"], assignment_map)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            outputs = sess.run(fetches, feed_dict=_feed(placeholders, arrays))
    np.savez(job["output"], **outputs)


def pretrain(job, tf, modeling, run_pretraining, optimization):
    import numpy as np

    arrays = dict(np.load(job["inputs"]))
    with tf.Graph().as_default():
        tf.set_random_seed(job["seed"])
        config = modeling.BertConfig.from_dict(job["config"])
        model, placeholders, fetches = _bert_model(tf, modeling, config, arrays)
        for name, dtype in (("masked_lm_positions", tf.int32), ("masked_lm_ids", tf.int32),
                            ("masked_lm_weights", tf.float32), ("next_sentence_labels", tf.int32)):
            placeholders[name] = tf.placeholder(dtype, arrays[name].shape, name=name)
        mlm_loss, _, _ = run_pretraining.get_masked_lm_output(
            config, model.get_sequence_output(), model.get_embedding_table(),
            placeholders["masked_lm_positions"], placeholders["masked_lm_ids"], placeholders["masked_lm_weights"])
        nsp_loss, _, _ = run_pretraining.get_next_sentence_output(
            config, model.get_pooled_output(), placeholders["next_sentence_labels"])
        # The logits: the tf.nn.bias_add at the top of each original head scope.
        graph = tf.get_default_graph()
        fetches["mlm_logits"] = graph.get_tensor_by_name("cls/predictions/BiasAdd:0")
        fetches["nsp_logits"] = graph.get_tensor_by_name("cls/seq_relationship/BiasAdd:0")
        fetches["mlm_loss"], fetches["nsp_loss"] = mlm_loss, nsp_loss
        train_op = optimization.create_optimizer(mlm_loss + nsp_loss, 1e-3, 10, 0, False)
        rng = np.random.default_rng(job["seed"])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for var in tf.trainable_variables():
                shape = var.shape.as_list()
                value = rng.normal(0.0, 0.1, shape) + (1.0 if var.name.endswith("gamma:0") else 0.0)
                var.load(value.astype(np.float32), sess)
            sess.run(train_op, feed_dict=_feed(placeholders, arrays))
            tf.train.Saver().save(sess, job["checkpoint"])
            outputs = sess.run(fetches, feed_dict=_feed(placeholders, arrays))
    np.savez(job["output"], **outputs)


def main(jobs_file):
    jobs_file = pathlib.Path(jobs_file)
    jobs = json.loads(jobs_file.read_text())
    install_patched_bert(jobs_file.parent / "original_bert_patched")
    import tensorflow.compat.v1 as tf

    tf.disable_eager_execution()
    from bert import modeling, optimization, run_pretraining

    for job in jobs:
        if job["job"] == "restore":
            restore(job, tf, modeling)
        elif job["job"] == "pretrain":
            pretrain(job, tf, modeling, run_pretraining, optimization)
        else:
            raise ValueError(f"unknown job {job['job']!r}")


if __name__ == "__main__":
    main(sys.argv[1])
