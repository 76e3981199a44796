"""BERT's optimizer: AdamW (or LAMB) with linear warmup, linear decay to zero and clipping.

Example:

    >>> optimizer = create_optimizer(1e-4, num_train_steps=10000, num_warmup_steps=1000)
    >>> float(optimizer.learning_rate)  # at step 0 of the warmup
    0.0
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers import accelerated

# Regexes that Keras matches against a variable's own name (not its path): LayerNorm weights are
# named `gamma` / `beta` and biases `bias` / `output_bias`; none of them gets weight decay.
DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("gamma", "beta", "bias")

OPTIMIZER_TYPES = ("adamw", "lamb")


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """BERT's learning-rate schedule: linear warmup, then linear decay to zero.

        lr(step) = init_lr * step / num_warmup_steps            if step < num_warmup_steps
        lr(step) = init_lr * (1 - min(step, num_train_steps) / num_train_steps)   otherwise

    As in the original BERT code the decay is measured over all `num_train_steps` (so the
    schedule drops from `init_lr` to `init_lr * (1 - warmup / total)` when warmup ends), and the
    first step (step 0) has learning rate 0 when there is a warmup.

    Args:
        init_lr: peak learning rate (float > 0).
        num_train_steps: total optimizer steps; the rate is 0 from here on (int > 0).
        num_warmup_steps: steps of linear warmup (int, 0 <= num_warmup_steps <= num_train_steps).

    Call args:
        step: the optimizer's iteration count (int or float scalar tensor).

    Returns:
        float32 scalar learning rate.

    Example:

        >>> schedule = WarmupLinearDecay(1e-4, num_train_steps=100, num_warmup_steps=10)
        >>> [round(float(schedule(s)), 8) for s in (0, 5, 10, 100)]
        [0.0, 5e-05, 9e-05, 0.0]
    """

    def __init__(self, init_lr: float, num_train_steps: int, num_warmup_steps: int = 0):
        if not init_lr > 0:
            raise ValueError(f"WarmupLinearDecay: init_lr must be positive, got {init_lr!r}.")
        if int(num_train_steps) < 1:
            raise ValueError(f"WarmupLinearDecay: num_train_steps must be >= 1, got {num_train_steps!r}.")
        if not 0 <= int(num_warmup_steps) <= int(num_train_steps):
            raise ValueError(
                f"WarmupLinearDecay: num_warmup_steps must be in [0, num_train_steps={num_train_steps}], "
                f"got {num_warmup_steps!r}."
            )
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        total = float(self.num_train_steps)
        decayed = self.init_lr * (1.0 - ops.minimum(step, total) / total)
        if not self.num_warmup_steps:
            return decayed
        warmup = self.init_lr * step / float(self.num_warmup_steps)
        return ops.where(step < self.num_warmup_steps, warmup, decayed)

    def get_config(self):
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
        }


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class AdamW(keras.optimizers.Optimizer):
    """`keras.optimizers.AdamW` (same arguments, math, config and checkpoint layout) whose Adam
    update of each variable runs as one fused kernel (`keras_bert_lite.layers.accelerated`).

    Built on `keras.optimizers.Optimizer`'s public interface only: Keras applies the weight decay
    (with `exclude_from_weight_decay`) and the gradient clipping as for its own AdamW, and this
    class's `update_step` updates both moments and the variable in one pass over the four
    tensors instead of about a dozen ops, each reading and writing the whole variable. Its slot
    variables are created and tracked as `keras.optimizers.Adam` does (`_momentums`,
    `_velocities`), so `tf.train.Checkpoint`s of either optimizer restore into the other.

    Under Mirrored strategies each device's copy of a variable is updated with the slots' copies
    on that device; where the variable itself is distributed (TPU replicas) the same update runs
    as plain ops, which the compiled TPU step fuses anyway.

    Args:
        learning_rate, weight_decay, beta_1, beta_2, epsilon: as `keras.optimizers.AdamW`.
        amsgrad: must be False (use `keras.optimizers.AdamW` for AMSGrad).
        **kwargs: `keras.optimizers.Optimizer` arguments (`global_clipnorm`, `name`, ...).

    Example:

        >>> optimizer = AdamW(learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6)
        >>> optimizer.exclude_from_weight_decay(var_names=["bias"])
    """

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay: float = 0.004,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        amsgrad: bool = False,
        name: str = "adamw",
        **kwargs,
    ):
        if amsgrad:
            raise ValueError("keras_bert_lite AdamW: amsgrad is not supported; use keras.optimizers.AdamW.")
        if weight_decay is None:
            raise ValueError("keras_bert_lite AdamW: weight_decay must be a number (0 for none).")
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        # Named as keras.optimizers.Adam's, so that checkpoints of either restore into the other.
        self._momentums, self._velocities = self.add_optimizer_variables(var_list, ["momentum", "velocity"])
        self._slots = _SlotTable(var_list, self._momentums, self._velocities)

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        step = ops.cast(self.iterations + 1, dtype)
        alpha = ops.cast(learning_rate, dtype) * ops.sqrt(1.0 - self.beta_2**step) / (1.0 - self.beta_1**step)
        gradient = ops.cast(tf.convert_to_tensor(gradient), dtype)  # a sparse gradient updates densely
        momentum, velocity = self._slots.of(variable)
        rates = (ops.cast(1.0 - self.beta_1, dtype), ops.cast(1.0 - self.beta_2, dtype), ops.cast(self.epsilon, dtype))
        if isinstance(momentum, keras.Variable):  # the variable itself is distributed: plain ops
            self.assign_add(momentum, (gradient - momentum) * rates[0])
            self.assign_add(velocity, (ops.square(gradient) - velocity) * rates[1])
            self.assign_sub(variable, alpha * momentum / (ops.sqrt(velocity) + rates[2]))
            return
        accelerated.adamw_step(variable, momentum, velocity, gradient, alpha, *rates)

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon, amsgrad=False)
        return config


class _SlotTable:
    """The (momentum, velocity) of each model variable, as `update_step` is given the variable.

    A plain object, so that neither Keras' tracking nor `tf.train.Checkpoint` sees the model
    variables through the optimizer. `update_step` gets a plain or one device's `tf.Variable`
    (Mirrored strategies), whose slots are the `tf.Variable`s on its device, or the distributed
    variable itself (TPU replicas), whose slots are the `keras.Variable`s. The table is filled on
    first use, inside the strategy that updates the variables.
    """

    def __init__(self, variables, momentums, velocities):
        self._triples = list(zip(variables, momentums, velocities))
        self._by_id = {}

    def of(self, variable):
        if not self._by_id:
            local_results = tf.distribute.get_strategy().experimental_local_results
            for model_variable, momentum, velocity in self._triples:
                self._by_id[id(model_variable.value)] = (momentum, velocity)
                copies = zip(*(local_results(v.value) for v in (model_variable, momentum, velocity)))
                for copy, momentum_copy, velocity_copy in copies:
                    if not isinstance(copy, tf.distribute.DistributedValues):
                        self._by_id[id(copy)] = (momentum_copy, velocity_copy)
        return self._by_id[id(variable)]


def create_optimizer(
    init_lr: float,
    num_train_steps: int,
    num_warmup_steps: int,
    weight_decay_rate: float = 0.01,
    optimizer_type: str = "adamw",
    beta_1: float = 0.9,
    beta_2: float = 0.999,
    epsilon: float = 1e-6,
    clipnorm: float | None = 1.0,
    exclude_from_weight_decay: Sequence[str] = DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
) -> keras.optimizers.Optimizer:
    """BERT's optimizer as a plain Keras optimizer.

    AdamW (this module's `AdamW`: `keras.optimizers.AdamW` with a fused update) or LAMB
    (`keras.optimizers.Lamb`) driven by `WarmupLinearDecay`, with decoupled weight decay on
    every variable except those whose name matches one of `exclude_from_weight_decay`, and
    gradients clipped to a global norm. Keras' Adam applies bias correction (the original BERT
    optimizer does not); this only changes the size of the first few hundred updates.

    Args:
        init_lr: peak learning rate (BERT pre-training: 1e-4; fine-tuning: 2e-5 to 5e-5).
        num_train_steps: total optimizer steps; the learning rate reaches 0 there.
        num_warmup_steps: steps of linear warmup from 0 to `init_lr`.
        weight_decay_rate: decoupled weight decay (0.01 in BERT); 0 disables it.
        optimizer_type: "adamw" or "lamb" (LAMB for very large batches).
        beta_1, beta_2, epsilon: Adam moments' decay rates and epsilon (0.9, 0.999, 1e-6 in BERT).
        clipnorm: global gradient-norm clip (1.0 in BERT); None or 0 disables it. Under a
            multi-replica `tf.distribute` strategy Keras would clip each replica's partial
            gradient before the all-reduce, so the distributed pre-training loop takes this
            value over and clips the all-reduced gradient itself (see `PretrainingLoop`).
        exclude_from_weight_decay: regexes matched (`re.search`) against each variable's own
            name; matching variables get no weight decay. The default excludes LayerNorm
            (`gamma`, `beta`) and all biases (`bias`, `output_bias`).

    Returns:
        An `AdamW` (a `keras.optimizers.AdamW`) or a `keras.optimizers.Lamb`; its
        `learning_rate` is the schedule evaluated at `optimizer.iterations`.

    Raises:
        ValueError: naming the argument, for an unknown `optimizer_type`, a negative weight
            decay or clip norm, or an invalid schedule.

    Example:

        >>> optimizer = create_optimizer(1e-4, num_train_steps=1000, num_warmup_steps=100)
        >>> pretrainer.compile(optimizer=optimizer)
    """
    if optimizer_type not in OPTIMIZER_TYPES:
        raise ValueError(f"create_optimizer: optimizer_type {optimizer_type!r} is not one of {OPTIMIZER_TYPES}.")
    if weight_decay_rate < 0:
        raise ValueError(f"create_optimizer: weight_decay_rate must be >= 0, got {weight_decay_rate!r}.")
    if clipnorm is not None and clipnorm < 0:
        raise ValueError(f"create_optimizer: clipnorm must be >= 0 or None, got {clipnorm!r}.")
    schedule = WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)
    kwargs = dict(
        learning_rate=schedule,
        weight_decay=float(weight_decay_rate),
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=clipnorm or None,
    )
    if optimizer_type == "adamw":
        optimizer = AdamW(**kwargs)
    else:
        optimizer = keras.optimizers.Lamb(**kwargs)
    if weight_decay_rate:
        optimizer.exclude_from_weight_decay(var_names=list(exclude_from_weight_decay))
    return optimizer
