"""BERT's optimizer: AdamW (or LAMB) with linear warmup, linear decay to zero and clipping
(`create_optimizer`)."""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import ops

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
        return {name: getattr(self, name) for name in ("init_lr", "num_train_steps", "num_warmup_steps")}


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class AdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` itself, under this package's registered name.

    Same arguments, math, config and slot variables (so `tf.train.Checkpoint`s restore into
    either), and so it works wherever Keras' does: `keras.Variable`s and plain `tf.Variable`s,
    eager or in a `tf.function`, in `fit`, under any `tf.distribute` strategy. The subclass keeps
    the name `keras_bert_lite>AdamW` that optimizers saved by earlier versions (in `.keras` files'
    compile configs) refer to.

    Example:

        >>> optimizer = AdamW(learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6)
        >>> optimizer.exclude_from_weight_decay(var_names=["bias"])
    """


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

    AdamW (this module's `AdamW`, which is `keras.optimizers.AdamW`) or LAMB
    (`keras.optimizers.Lamb`) driven by `WarmupLinearDecay`, with decoupled weight decay on
    every variable except those whose name matches one of `exclude_from_weight_decay`, and
    gradients clipped to a global norm. Keras' Adam applies bias correction (the original BERT
    optimizer does not); this only changes the size of the first few hundred updates.

    Args:
        init_lr, num_train_steps, num_warmup_steps: the `WarmupLinearDecay` schedule (BERT's
            peak rate: 1e-4 for pre-training; 2e-5 to 5e-5 for fine-tuning).
        weight_decay_rate: decoupled weight decay (0.01 in BERT); 0 disables it.
        optimizer_type: "adamw" or "lamb" (LAMB for very large batches).
        beta_1, beta_2, epsilon: Adam moments' decay rates and epsilon (0.9, 0.999, 1e-6 in BERT).
        clipnorm: global gradient-norm clip (1.0 in BERT); None or 0 disables it. Under several
            replicas `PretrainingLoop` applies it to the all-reduced gradient (see there).
        exclude_from_weight_decay: regexes matched (`re.search`) against each variable's own
            name; matching variables get no weight decay. The default excludes LayerNorm
            (`gamma`, `beta`) and all biases (`bias`, `output_bias`).

    Returns:
        An `AdamW` or a `keras.optimizers.Lamb`, whose `learning_rate` is the schedule.

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
    optimizer = (AdamW if optimizer_type == "adamw" else keras.optimizers.Lamb)(
        learning_rate=schedule,
        weight_decay=float(weight_decay_rate),
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=clipnorm or None,
    )
    if weight_decay_rate:
        optimizer.exclude_from_weight_decay(var_names=list(exclude_from_weight_decay))
    return optimizer
