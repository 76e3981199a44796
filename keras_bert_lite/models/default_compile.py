"""The optimizer a task model trains with when nobody chose one: BERT's, sized by `fit`.

BERT fine-tunes with AdamW, a linear warmup over the first 10 % of the steps and a linear decay to
zero at the last one (`keras_bert_lite.create_optimizer`). The schedule's length depends on the
data and the epochs, which only `fit` knows, so `compile(optimizer="auto")` creates the optimizer
with a placeholder schedule (`ConstantUntilFit`) and the first `fit` sizes it. KerasHub's tasks
compile a constant-rate Adam at construction instead; fine-tuning with warmup and decay is what
the paper, the original code and Hugging Face's `Trainer` do.

Example:

    >>> clf.compile()                             # or nothing: fit() compiles this way
    >>> clf.fit(texts, labels, epochs=3)          # schedule: 3 epochs of ceil(N / 32) steps
"""

from __future__ import annotations

import dataclasses
import math

import keras
import tensorflow as tf

from keras_bert_lite.optimization import WarmupLinearDecay, create_optimizer

# The paper's fine-tuning rates are 5e-5 to 2e-5; 5e-5 is also Hugging Face's and KerasHub's default.
DEFAULT_LEARNING_RATE = 5e-5
DEFAULT_WARMUP_PROPORTION = 0.1


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class ConstantUntilFit(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate of an "auto" optimizer before `fit` sizes its schedule: the peak rate.

    What code that steps the optimizer without `fit` (`train_on_batch`, a custom loop) trains with;
    compile with `create_optimizer(...)` to give such code BERT's schedule.
    """

    def __init__(self, learning_rate: float):
        self.learning_rate = float(learning_rate)

    def __call__(self, step):
        return keras.ops.convert_to_tensor(self.learning_rate, "float32")

    def get_config(self):
        return {"learning_rate": self.learning_rate}


@dataclasses.dataclass(frozen=True)
class DefaultOptimizer:
    """What `compile(optimizer="auto")` asked for, and the schedule `fit` chose.

    Attributes:
        learning_rate: the peak learning rate.
        warmup_proportion: the fraction of the steps with linear warmup.
        num_train_steps: the schedule's length once `fit` has set it, else None.
    """

    learning_rate: float = DEFAULT_LEARNING_RATE
    warmup_proportion: float = DEFAULT_WARMUP_PROPORTION
    num_train_steps: int | None = None

    def __post_init__(self):
        if not (isinstance(self.learning_rate, (int, float)) and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be a positive number, got {self.learning_rate!r}.")
        if not (isinstance(self.warmup_proportion, (int, float)) and 0 <= self.warmup_proportion <= 1):
            raise ValueError(f"warmup_proportion must be in [0, 1], got {self.warmup_proportion!r}.")

    def placeholder(self) -> keras.optimizers.Optimizer:
        """BERT's AdamW, its schedule left to `fit` (see `ConstantUntilFit`)."""
        optimizer = create_optimizer(self.learning_rate, 1, 0)
        optimizer.learning_rate = ConstantUntilFit(self.learning_rate)
        return optimizer

    def sized(self, optimizer: keras.optimizers.Optimizer, num_steps: int, model_name: str) -> DefaultOptimizer:
        """Sets the schedule of `optimizer` for a `fit` call of `num_steps` steps (the first call), or
        checks that the schedule set by an earlier call covers them.

        Returns:
            The settings with `num_train_steps` set.

        Raises:
            ValueError: the steps would run past the end of the schedule set earlier (the learning
                rate is 0 there, so they would not train).
        """
        done = int(optimizer.iterations)
        if self.num_train_steps is None:
            optimizer.learning_rate = WarmupLinearDecay(
                self.learning_rate, num_steps, int(num_steps * self.warmup_proportion)
            )
            return dataclasses.replace(self, num_train_steps=num_steps)
        if done + num_steps > self.num_train_steps:
            raise ValueError(
                f"{model_name}: this fit() would run steps {done + 1}-{done + num_steps}, but the default optimizer's "
                f"schedule, sized by the first fit() after compile(), decays to 0 at step {self.num_train_steps}. "
                "Call compile() again for a new schedule over the next fit(), or train in one fit() call."
            )
        return self


def count_steps_per_epoch(x, batch_size: int | None, steps: int | None, validation_split: float) -> int:
    """Optimizer steps in one epoch of `fit(x, ...)`, as Keras will run them.

    Raises:
        ValueError: naming `steps_per_epoch`, when the number cannot be known in advance (a dataset of
            unknown or infinite size, a generator).
    """
    if steps is not None:
        return int(steps)
    if isinstance(x, tf.data.Dataset):
        count = int(x.cardinality())
        if count < 0:
            raise ValueError(
                "fit() with the default optimizer needs the number of steps per epoch to size its schedule, and this "
                "dataset's size is unknown (e.g. after filter()) or infinite: pass steps_per_epoch, or compile() "
                "with your own optimizer."
            )
        return count
    if isinstance(x, keras.utils.PyDataset):
        return len(x)
    leaves = keras.tree.flatten(x)
    if not leaves or not hasattr(leaves[0], "__len__"):
        raise ValueError(
            f"fit() with the default optimizer cannot count the steps of a {type(x).__name__}: pass steps_per_epoch, "
            "or compile() with your own optimizer."
        )
    count = len(leaves[0])
    if validation_split:  # Keras trains on the first floor(N * (1 - split)) examples
        count = int(math.floor(count * (1.0 - validation_split)))
    return max(1, math.ceil(count / (batch_size or 32)))
