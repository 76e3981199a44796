"""BERT's optimizer: the schedule and weight-decay exclusions against the original BERT code."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from bert import optimization as original

from keras_bert_lite.config import BertConfig
from keras_bert_lite.interop.mapping import weight_specs
from keras_bert_lite.models import BertEncoder, BertPretrainer
from keras_bert_lite.training.optimization import AdamW, WarmupLinearDecay, create_optimizer

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


def _adamw_run(optimizer_class, steps, checkpoint_to=None, restore_from=None):
    """Trains a kernel, a bias (no decay) and an embedding (sparse gradients) for `steps` steps;
    returns the variables and the optimizer's slots."""
    rng = np.random.default_rng(0)
    variables = [keras.Variable(rng.normal(size=shape).astype("float32"), name=name)
                 for shape, name in [((6, 4), "kernel"), ((4,), "bias"), ((9, 4), "embeddings"), ((6, 4), "kernel")]]
    optimizer = optimizer_class(learning_rate=0.05, weight_decay=0.1, epsilon=1e-6, global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    optimizer.build(variables)
    checkpoint = tf.train.Checkpoint(optimizer=optimizer, variables=variables)
    if restore_from:
        checkpoint.read(restore_from).assert_consumed()

    @tf.function
    def step(k):
        with tf.GradientTape() as tape:
            hidden = tf.gather(variables[2], [1, 4, 1]) @ tf.transpose(variables[0] + 2.0 * variables[3])
            loss = (tf.reduce_sum(tf.sin(hidden)) + tf.reduce_sum(variables[1] ** 2)) * k
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))

    for k in range(steps):
        step(tf.constant(0.3 + k, tf.float32))  # gradient norms from below to far above the clip
    if checkpoint_to:
        checkpoint.write(checkpoint_to)
    return [v.numpy() for v in variables + optimizer.variables]


def test_fused_adamw_matches_keras_adamw(tmp_path):
    """Same math as `keras.optimizers.AdamW` (decay, exclusions, clipping, sparse gradients) to
    float32 rounding, and it resumes from a checkpoint Keras' AdamW wrote (same slot variables)."""
    # Tolerance: float32 rounding of 6 steps of size ~0.05 (values pass near 0, so absolute).
    expected = _adamw_run(keras.optimizers.AdamW, 6)
    for got, want in zip(_adamw_run(AdamW, 6), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=5e-7)
    _adamw_run(keras.optimizers.AdamW, 3, checkpoint_to=str(tmp_path / "keras_adamw"))
    resumed = _adamw_run(AdamW, 3, restore_from=str(tmp_path / "keras_adamw"))
    for got, want in zip(resumed, expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=5e-7)
    assert isinstance(create_optimizer(1e-3, 100, 10), AdamW)
    with pytest.raises(ValueError, match="amsgrad is not supported"):
        AdamW(amsgrad=True)


def test_fused_adamw_under_a_mirrored_strategy():
    """Mirrored strategies update each device's copy of a variable (the compiled update gets the
    slots' copies on that device); TPU replicas pass the distributed variable itself (Keras' ops)."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])

    def run(optimizer_class, distributed_variable):
        with strategy.scope():  # two variables of one shape: each must get its own slots
            variables = [keras.Variable(np.arange(6, dtype="float32").reshape(2, 3) + i, name="kernel")
                         for i in range(2)]
            # apply_gradients clips (global norm 0.55 > 0.4): under a strategy each replica clips its own.
            optimizer = optimizer_class(learning_rate=0.1, weight_decay=0.1, global_clipnorm=0.4)
            optimizer.build(variables)
        gradients = [tf.fill((2, 3), 0.1 * (i + 1)) for i in range(2)]
        for _ in range(3):
            if not distributed_variable:
                strategy.run(tf.function(lambda: optimizer.apply_gradients(zip(gradients, variables))))
                continue
            with strategy.scope():
                for gradient, variable in zip(gradients, variables):
                    variable.assign_sub(variable * 0.1 * 0.1)  # Keras' weight decay: a pass of its own
                    optimizer.update_step(gradient, variable.value, 0.1)
                optimizer.iterations.assign_add(1)
        return [v.numpy() for v in variables + optimizer.variables]

    for distributed_variable in (False, True):
        expected = run(keras.optimizers.AdamW, distributed_variable)
        for got, want in zip(run(AdamW, distributed_variable), expected):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


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
