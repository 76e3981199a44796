"""BERT's optimizer: the schedule and weight-decay exclusions against the original BERT code, Google's own
optimizer test, and trajectories equal to keras.optimizers.AdamW's wherever Keras' optimizer works."""

import functools
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from bert import optimization as original

from keras_bert_lite.config import BertConfig
from keras_bert_lite.interop.mapping import weight_specs
from keras_bert_lite.models import BertEncoder, BertPretrainer
from keras_bert_lite.optimization import AdamW, WarmupLinearDecay, create_optimizer

INIT_LR, TOTAL, WARMUP = 1e-3, 100, 10
STEPS = [0, 1, 5, 9, 10, 11, 50, 99, 100, 130]


def original_learning_rates(init_lr, num_train_steps, num_warmup_steps, steps):
    """The learning rate of Google's `optimization.create_optimizer` at each global step."""
    captured = {}
    original_class = original.AdamWeightDecayOptimizer

    def recorder(learning_rate, **kwargs):
        captured["learning_rate"] = learning_rate
        # The class refers to itself by its module-level name (in super()); restore it first.
        original.AdamWeightDecayOptimizer = original_class
        return original_class(learning_rate, **kwargs)

    graph = tf.Graph()
    with graph.as_default():
        weight = tf.compat.v1.get_variable("w", initializer=tf.constant([1.0]))
        original.AdamWeightDecayOptimizer = recorder
        try:
            original.create_optimizer(tf.reduce_sum(weight**2), init_lr, num_train_steps, num_warmup_steps, False)
        finally:
            original.AdamWeightDecayOptimizer = original_class
        global_step = tf.compat.v1.train.get_global_step()
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            rates = []
            for step in steps:
                global_step.load(step, session)
                rates.append(session.run(captured["learning_rate"]))
    return np.array(rates)


@pytest.mark.parametrize("warmup", [WARMUP, 0])
def test_schedule_matches_original_bert(warmup):
    expected = original_learning_rates(INIT_LR, TOTAL, warmup, STEPS)
    schedule = WarmupLinearDecay(INIT_LR, TOTAL, warmup)
    np.testing.assert_allclose([float(schedule(s)) for s in STEPS], expected, rtol=1e-5, atol=1e-10)
    # The optimizer evaluates it at its iteration count.
    optimizer = create_optimizer(INIT_LR, TOTAL, warmup)
    optimizer.build([keras.Variable(np.zeros(2, np.float32))])
    rates = []
    for step in STEPS:
        optimizer.iterations.assign(step)
        rates.append(float(optimizer.learning_rate))
    np.testing.assert_allclose(rates, expected, rtol=1e-5, atol=1e-10)


def test_schedule_and_optimizer_serialize():
    optimizer = create_optimizer(INIT_LR, TOTAL, WARMUP, optimizer_type="adamw")
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert restored.get_config() == optimizer.get_config()
    assert restored.global_clipnorm == 1.0 and restored.weight_decay == 0.01
    assert (restored.beta_1, restored.beta_2, restored.epsilon) == (0.9, 0.999, 1e-6)
    schedule = keras.optimizers.schedules.deserialize(restored.get_config()["learning_rate"])
    assert isinstance(schedule, WarmupLinearDecay)
    assert float(schedule(55)) == pytest.approx(float(WarmupLinearDecay(INIT_LR, TOTAL, WARMUP)(55)))


def test_weight_decay_matches_original_exclusions():
    """One step with zero gradients is pure weight decay; compare it with the original optimizer."""
    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=50, hidden_size=16, num_attention_heads=2,
                               intermediate_size=32, num_hidden_layers=1, max_position_embeddings=16)
    pretrainer = BertPretrainer(BertEncoder(config))
    specs = weight_specs(pretrainer, "google")
    before = [spec.variable.numpy() for spec in specs]
    learning_rate = 0.5  # large, so the decay is far above float32 rounding

    optimizer = create_optimizer(learning_rate, num_train_steps=10, num_warmup_steps=0)
    variables = [spec.variable for spec in specs]
    optimizer.apply([tf.zeros_like(v) for v in variables], variables)
    ours = [v.numpy() for v in variables]

    graph = tf.Graph()
    with graph.as_default():
        params = [tf.compat.v1.get_variable(spec.name, initializer=value) for spec, value in zip(specs, before)]
        reference = original.AdamWeightDecayOptimizer(
            learning_rate, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
            exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"],
        )
        train_op = reference.apply_gradients([(tf.zeros_like(p), p) for p in params])
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(train_op)
            expected = session.run(params)

    decayed = 0
    for spec, old, new, want in zip(specs, before, ours, expected):
        np.testing.assert_allclose(new, want, rtol=1e-6, atol=1e-9, err_msg=spec.name)
        decayed += not np.allclose(new, old)
    # Both kinds occur: kernels and embeddings decay; LayerNorm and biases do not.
    assert 0 < decayed < len(specs)


def test_lamb_and_bad_arguments():
    assert isinstance(create_optimizer(1e-3, 100, 10, optimizer_type="lamb"), keras.optimizers.Lamb)
    assert create_optimizer(1e-3, 100, 10, clipnorm=None).global_clipnorm is None
    with pytest.raises(ValueError, match="optimizer_type 'sgd'"):
        create_optimizer(1e-3, 100, 10, optimizer_type="sgd")
    with pytest.raises(ValueError, match="weight_decay_rate"):
        create_optimizer(1e-3, 100, 10, weight_decay_rate=-1.0)
    with pytest.raises(ValueError, match="num_warmup_steps"):
        WarmupLinearDecay(1e-3, 100, 200)
    with pytest.raises(ValueError, match="num_train_steps"):
        WarmupLinearDecay(1e-3, 0, 0)


# Keras' AdamW is the reference, so its math must match to float32 rounding (values O(0.1-1)).
TRAJECTORY_TOLERANCE = {"rtol": 1e-6, "atol": 1e-6}


@functools.cache  # one strategy: several in one process can mix up their collective ops' keys
def _mirrored_strategy():
    """Two replicas on the two logical CPUs this module configures when run as a script."""
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

# Google's optimization_test.py (bert-tensorflow 1.0.4): w moves to x minimising mean((x - w)^2).
GOOGLE_W, GOOGLE_X = [0.1, -0.2, -0.1], [0.4, 0.2, -0.5]
# BERT's settings: warmup then linear decay, weight decay 0.01, clipping at global norm 1.0; ours, and
# keras.optimizers.AdamW set up by hand as it should be. (`AdamW` alone is Keras' class, see
# test_adamw_is_keras_adamw_under_a_registered_name: its trajectory would be Keras' own.)
OPTIMIZERS = {
    "create_optimizer": (lambda: create_optimizer(0.2, num_train_steps=100, num_warmup_steps=10),
                         lambda: keras.optimizers.AdamW(learning_rate=WarmupLinearDecay(0.2, 100, 10),
                                                        weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)),
}


def test_adamw_is_keras_adamw_under_a_registered_name():
    """`AdamW` adds no behaviour of its own to keras.optimizers.AdamW (so Keras' tests cover its math):
    it only keeps the registered name that `.keras` files saved with it refer to."""
    assert AdamW.__bases__ == (keras.optimizers.AdamW,)
    # Only the class's own data (`__annotations__` appears once anything reads it, as Keras may).
    assert set(vars(AdamW)) <= {"__module__", "__qualname__", "__doc__", "__firstlineno__", "__static_attributes__",
                                "__annotations__"}
    assert not AdamW.__annotations__
    optimizer = AdamW(learning_rate=0.2, weight_decay=0.0, epsilon=1e-6)
    assert keras.saving.serialize_keras_object(optimizer)["registered_name"] == "keras_bert_lite>AdamW"
    assert type(keras.optimizers.deserialize(keras.saving.serialize_keras_object(optimizer))) is AdamW


def _google_trajectory(make_optimizer, variable_class, mode, steps=100):
    """Google's test loop, `apply_gradients([(grad, w)])` on a single variable; returns w after each step."""
    strategy = _mirrored_strategy() if mode == "mirrored" else tf.distribute.get_strategy()
    with strategy.scope():
        w = variable_class(np.array(GOOGLE_W, "float32"), name="w")
        optimizer = make_optimizer()
        if mode == "mirrored":  # Keras' optimizers must be built before a replicated tf.function
            optimizer.build([w])
    x = tf.constant(GOOGLE_X)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x - w))
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])

    run = {"eager": step, "function": tf.function(step), "mirrored": tf.function(lambda: strategy.run(step))}[mode]
    trajectory = []
    for _ in range(steps):
        run()
        trajectory.append(np.array(w.numpy()))
    return np.array(trajectory)


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("variable_class", [tf.Variable, keras.Variable], ids=["tf.Variable", "keras.Variable"])
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_google_optimization_test_on_any_variable(name, variable_class, mode):
    """Google's own test, on plain `tf.Variable`s and `keras.Variable`s, eager and in a `tf.function`
    (and under a MirroredStrategy, see below): w reaches x, along keras.optimizers.AdamW's trajectory."""
    ours, keras_adamw = OPTIMIZERS[name]
    trajectory = _google_trajectory(ours, variable_class, mode)
    np.testing.assert_allclose(trajectory[-1], GOOGLE_X, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(trajectory, _google_trajectory(keras_adamw, variable_class, mode),
                               **TRAJECTORY_TOLERANCE)


def _bert_like_model():
    """Embedding (sparse gradients), Dense kernels and biases, LayerNorm gamma and beta."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((4,), dtype="int32")
    x = keras.layers.Dense(8, activation="gelu")(keras.layers.Embedding(20, 8)(ids))
    x = keras.layers.Flatten()(keras.layers.LayerNormalization(epsilon=1e-12)(x))
    return keras.Model(ids, keras.layers.Dense(1)(x))


def _bert_settings_keras_adamw(model):
    """keras.optimizers.AdamW set up by hand as BERT's: the schedule, decay 0.01 except on
    LayerNorm and biases (chosen by variable, not by name), clipping at global norm 1.0."""
    optimizer = keras.optimizers.AdamW(learning_rate=WarmupLinearDecay(0.05, 8, 2), weight_decay=0.01,
                                       epsilon=1e-6, global_clipnorm=1.0)
    layer_norm = [layer for layer in model.layers if isinstance(layer, keras.layers.LayerNormalization)]
    biases = [layer.bias for layer in model.layers if isinstance(layer, keras.layers.Dense)]
    optimizer.exclude_from_weight_decay(var_list=layer_norm[0].weights + biases)
    return optimizer


def _bert_optimizer(model):
    return create_optimizer(0.05, num_train_steps=8, num_warmup_steps=2)


def _train_bert_like(make_optimizer, mode, steps=8, checkpoint_to=None, restore_from=None):
    """`steps` steps of batch 4 on a regression whose gradients' norm starts far above the clip;
    returns the model's and the optimizer's variables."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 20, (4 * 8, 4)).astype("int32")  # 8 batches: steps 0-7 of any run
    targets = rng.normal(scale=10.0, size=(4 * 8, 1)).astype("float32")
    strategy = _mirrored_strategy() if mode.startswith("mirrored") else tf.distribute.get_strategy()
    with strategy.scope():
        model = _bert_like_model()
        optimizer = make_optimizer(model)
    if mode.endswith("fit"):
        model.compile(optimizer=optimizer, loss="mse")
        model.fit(ids[:4 * steps], targets[:4 * steps], batch_size=4, shuffle=False, verbose=0)
    else:
        optimizer.build(model.trainable_variables)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
        if restore_from:
            checkpoint.read(restore_from).assert_consumed()

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

        done = int(optimizer.iterations.numpy())
        for batch in range(done, done + steps):
            step(ids[4 * batch:4 * batch + 4], targets[4 * batch:4 * batch + 4])
        if checkpoint_to:
            checkpoint.write(checkpoint_to)
    assert optimizer.iterations.numpy() == steps + (3 if restore_from else 0)
    return [v.numpy() for v in model.weights + optimizer.variables]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["function", "fit"])
def test_bert_settings_follow_keras_adamw(mode):
    """`create_optimizer`'s defaults train a model with Embedding, Dense and LayerNorm weights along
    keras.optimizers.AdamW's trajectory with BERT's settings (custom loop, `fit`; and under a
    MirroredStrategy, see below)."""
    expected = _train_bert_like(_bert_settings_keras_adamw, mode)
    got = _train_bert_like(_bert_optimizer, mode)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, **TRAJECTORY_TOLERANCE)
    assert isinstance(create_optimizer(1e-3, 100, 10), (AdamW, keras.optimizers.AdamW))


def test_checkpoints_restore_into_keras_adamw_and_back(tmp_path):
    """3 steps, a `tf.train.Checkpoint`, 3 more steps with the other optimizer: the same variables
    and slots as 6 steps with either (the slot variables are Keras' AdamW's own)."""
    expected = _train_bert_like(_bert_optimizer, "function", steps=6)
    for first, second in [(_bert_optimizer, _bert_settings_keras_adamw), (_bert_settings_keras_adamw, _bert_optimizer)]:
        path = str(tmp_path / first.__name__)
        _train_bert_like(first, "function", steps=3, checkpoint_to=path)
        resumed = _train_bert_like(second, "function", steps=3, restore_from=path)
        for a, b in zip(resumed, expected):
            np.testing.assert_allclose(a, b, **TRAJECTORY_TOLERANCE)


def test_optimizer_variables_are_its_own_slots_only():
    """The optimizer tracks its iteration count and slots, never the model's variables (which a
    reset of `optimizer.variables` or an optimizer-only checkpoint would otherwise reach)."""
    variables = [keras.Variable(np.ones((2, 3), "float32"), name="kernel"), keras.Variable(np.ones(3, "float32"))]
    optimizer = create_optimizer(1e-3, 10, 1)
    optimizer.build(variables)
    model_ids = {id(v) for v in variables}
    assert len(optimizer.variables) == 1 + 2 * len(variables)
    assert not model_ids & {id(v) for v in optimizer.variables}
    for variable in optimizer.variables:
        variable.assign(tf.zeros_like(variable))
    np.testing.assert_array_equal(variables[0].numpy(), np.ones((2, 3)))


@pytest.mark.slow
def test_under_a_two_device_mirrored_strategy():
    """The two tests above under a MirroredStrategy of two replicas, in a fresh process (this file run
    as a script): two logical CPUs must be configured before TensorFlow initializes its devices."""
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "mirrored: 3 cases equal"


if __name__ == "__main__":
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2
    )
    for name in OPTIMIZERS:
        for variable_class in (tf.Variable, keras.Variable):
            test_google_optimization_test_on_any_variable(name, variable_class, "mirrored")
    test_bert_settings_follow_keras_adamw("mirrored_fit")
    print("mirrored: 3 cases equal")
