"""The distributed pre-training step: `strategy.run` inside a `tf.function` of many steps.

`model.fit` stays the fine-tuning path; pre-training uses this custom loop because Keras 3's
`fit` fails under MultiWorkerMirroredStrategy and `steps_per_execution > 1` fails under
MirroredStrategy on this TensorFlow. One call of `PretrainingLoop.train` runs many optimizer
steps in one `tf.function` (a `tf.range` loop), so the host is not in the loop on TPUs.

Each optimizer step, on every replica:
  1. the local batch is split into `gradient_accumulation_steps` micro-batches whose gradients
     are summed, one micro-batch in memory at a time;
  2. the loss is normalised by the *global* batch (the number of masked positions and of
     examples summed over all replicas and micro-batches), so the summed gradient is exactly
     the gradient of `pretraining_losses` on the whole global batch, whatever the number of
     replicas or micro-batches;
  3. with one replica the optimizer clips the gradient to its `global_clipnorm` itself; with
     more, the gradient is all-reduced (summed) over replicas and clipped here (Keras would clip
     each replica's partial gradient before its own all-reduce), then each replica hands the
     optimizer a 1/num_replicas share, which the optimizer sums back; its own clip is then a
     no-op. With more than one replica this costs a second all-reduce per step, the price of
     clipping the global gradient as BERT does.

Example:

    >>> with strategy.scope():
    ...     pretrainer = BertPretrainer(BertEncoder(BertConfig.preset("tiny")))
    ...     optimizer = create_optimizer(1e-4, num_train_steps=1000, num_warmup_steps=100)
    >>> loop = PretrainingLoop(strategy, pretrainer, optimizer, global_batch_size=256)
    >>> iterator = iter(loop.distribute(lambda context: pretraining_dataset(...)))
    >>> history = loop.train(iterator, num_steps=100)   # {"loss": float32 [100], ...}
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lite.models.losses import MLM_EPSILON, STATISTIC_NAMES, pretraining_statistics

# Per-step statistics returned by `PretrainingLoop.train`, and those of `PretrainingLoop.evaluate`.
STAT_NAMES = STATISTIC_NAMES + ("learning_rate", "gradient_norm")
EVAL_NAMES = STATISTIC_NAMES + ("mlm_top5_accuracy",)


def global_batch_shares(labels: dict, outputs: dict, mlm_weight_total, num_examples_total) -> tf.Tensor:
    """This (micro-)batch's share of the global batch's `STATISTIC_NAMES`, float32 [5], given the
    global batch's `mlm_weight_total` and `num_examples_total` (see `pretraining_statistics`):
    summed over every replica and micro-batch of one step, the global batch's statistics."""
    statistics = pretraining_statistics(labels, outputs, mlm_weight_total, num_examples_total)
    return tf.stack([statistics[name] for name in STATISTIC_NAMES])


class PretrainingLoop:
    """Trains a `BertPretrainer` under any `tf.distribute` strategy.

    Build the model and the optimizer inside `strategy.scope()` first. For `mixed_float16`
    wrap the optimizer in `keras.optimizers.LossScaleOptimizer` (also in the scope); the loop
    scales the loss and skips steps with non-finite gradients through it.

    Args:
        strategy: the distribution strategy the model was built under.
        model: a `BertPretrainer` (inputs as `pretraining_dataset` features, outputs
            `mlm_logits`, `nsp_logits`).
        optimizer: e.g. from `create_optimizer`; its `global_clipnorm` is applied to the
            all-reduced gradient.
        global_batch_size: examples per optimizer step over all replicas and micro-batches;
            must be divisible by num_replicas x gradient_accumulation_steps.
        gradient_accumulation_steps: micro-batches per replica per step; the update equals one
            step on the whole global batch.
        jit_compile: compile each micro-batch's forward and backward pass with XLA (TPUs
            always compile).

    Attributes:
        global_step: int64 variable, optimizer steps taken (checkpoint it with the model).
        micro_batch_size: examples per replica per micro-batch.
        loss_scaling: whether the optimizer is a `LossScaleOptimizer` (steps with non-finite
            gradients are then skipped rather than fatal).
        clip_norm: global gradient-norm clip taken from the optimizer (None: no clipping).
    """

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer,
        global_batch_size: int,
        gradient_accumulation_steps: int = 1,
        jit_compile: bool = False,
    ):
        replicas = strategy.num_replicas_in_sync
        if gradient_accumulation_steps < 1:
            raise ValueError(f"gradient_accumulation_steps must be >= 1, got {gradient_accumulation_steps}.")
        if global_batch_size < 1 or global_batch_size % (replicas * gradient_accumulation_steps):
            raise ValueError(
                f"global_batch_size {global_batch_size} must be a positive multiple of num_replicas "
                f"({replicas}) x gradient_accumulation_steps ({gradient_accumulation_steps})."
            )
        self.strategy = strategy
        self.model = model
        self.optimizer = optimizer
        self.global_batch_size = global_batch_size
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.micro_batch_size = global_batch_size // (replicas * gradient_accumulation_steps)
        self.loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        self._inner_optimizer = optimizer.inner_optimizer if self.loss_scaling else optimizer
        self.clip_norm = self._inner_optimizer.global_clipnorm
        with strategy.scope():
            self.global_step = tf.Variable(
                0, dtype=tf.int64, trainable=False, name="global_step",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
            optimizer.build(model.trainable_variables)
        self._micro_step = tf.function(self._micro_gradients, jit_compile=jit_compile or None)
        self._train_fn = tf.function(functools.partial(self._run_steps, self._replica_train_step))
        self._eval_fn = tf.function(functools.partial(self._run_steps, self._replica_eval_step))

    def distribute(self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]):
        """Distributes per-input-pipeline datasets (`strategy.distribute_datasets_from_function`).

        `dataset_fn(input_context)` must return batches of
        `input_context.get_per_replica_batch_size(global_batch_size)` examples with static
        shapes (`drop_remainder=True`), sharded by `input_context` (as `pretraining_dataset`
        does when given it).
        """
        return self.strategy.distribute_datasets_from_function(dataset_fn)

    def train(self, iterator, num_steps: int) -> dict[str, np.ndarray]:
        """Runs `num_steps` optimizer steps in one `tf.function` call.

        Args:
            iterator: an iterator over `distribute(...)`'s dataset of `(features, labels)`.
            num_steps: steps to run (a new value does not retrace).

        Returns:
            `STAT_NAMES` -> float32 [num_steps] over the global batch of each step (the learning
            rate is the one used by the step; the gradient norm is before clipping).
        """
        history = self._train_fn(iterator, tf.constant(num_steps, tf.int32)).numpy()
        return {name: history[:, i] for i, name in enumerate(STAT_NAMES)}

    def evaluate(self, iterator, num_steps: int) -> dict[str, float]:
        """Losses and accuracies over `num_steps` global batches, without dropout.

        Returns:
            `EVAL_NAMES` -> mean over the batches: the losses and accuracies of `STAT_NAMES`,
            and `mlm_top5_accuracy`, the share of masked tokens whose label is among the
            model's five most likely tokens.
        """
        history = self._eval_fn(iterator, tf.constant(num_steps, tf.int32)).numpy()
        return {name: float(history[:, i].mean()) for i, name in enumerate(EVAL_NAMES)}

    def _run_steps(self, replica_step, iterator, num_steps):
        history = tf.TensorArray(tf.float32, size=num_steps)
        for step in tf.range(num_steps):
            shares = self.strategy.run(replica_step, args=next(iterator))
            history = history.write(step, self.strategy.reduce(tf.distribute.ReduceOp.SUM, shares, axis=None))
            if replica_step == self._replica_train_step:
                self.global_step.assign_add(1)
        return history.stack()

    def _global_totals(self, labels):
        """(sum of masked_lm_weights, number of examples) over the global batch."""
        weights = tf.cast(labels["masked_lm_weights"], tf.float32)
        local = tf.stack([tf.reduce_sum(weights), tf.cast(tf.shape(weights)[0], tf.float32)])
        if self.strategy.num_replicas_in_sync > 1:
            local = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, local)
        return local[0], local[1]

    def _micro_gradients(self, features, labels, mlm_weight_total, num_examples_total):
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.model(features, training=True)
            shares = global_batch_shares(labels, outputs, mlm_weight_total, num_examples_total)
            loss = self.optimizer.scale_loss(shares[0]) if self.loss_scaling else shares[0]
        gradients = tape.gradient(loss, variables)
        return [tf.convert_to_tensor(g) for g in gradients], shares

    def _replica_train_step(self, features, labels):
        mlm_weight_total, num_examples_total = self._global_totals(labels)
        learning_rate = tf.cast(self._inner_optimizer.learning_rate, tf.float32)
        k = self.gradient_accumulation_steps
        if k == 1:
            gradients, shares = self._micro_step(features, labels, mlm_weight_total, num_examples_total)
        else:
            # Every tensor of (features, labels) as [k, batch / k, ...]: k micro-batches.
            micro_batches = tf.nest.map_structure(
                lambda t: tf.reshape(t, tf.concat([[k, -1], tf.shape(t)[1:]], 0)), (features, labels)
            )

            def accumulate(i, gradients, shares):
                micro_batch = tf.nest.map_structure(lambda t: t[i], micro_batches)
                new_gradients, new_shares = self._micro_step(
                    *micro_batch, mlm_weight_total, num_examples_total
                )
                return i + 1, [a + b for a, b in zip(gradients, new_gradients)], shares + new_shares

            zeros = [tf.zeros_like(v) for v in self.model.trainable_variables]
            _, gradients, shares = tf.while_loop(
                lambda i, *_: i < k, accumulate, (tf.constant(0), zeros, tf.zeros([len(STATISTIC_NAMES)]))
            )
        gradient_norm = self._apply(gradients)
        replicas = float(self.strategy.num_replicas_in_sync)
        return tf.concat([shares, tf.stack([learning_rate, gradient_norm]) / replicas], 0)

    def _apply(self, gradients):
        """Applies summed gradients, clipped to the global norm (by the optimizer itself with one
        replica, here after the all-reduce with more); returns the global norm before clipping."""
        replicas = self.strategy.num_replicas_in_sync
        # Gradients of the loss times `scale`, so their norm is `scale` times the true one.
        scale = tf.cast(self.optimizer.dynamic_scale, tf.float32) if self.loss_scaling else 1.0
        if replicas > 1:
            gradients = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, gradients)
        scaled_norm = tf.linalg.global_norm(gradients)
        if replicas > 1:  # (one replica: the optimizer clips the whole gradient itself)
            if self.clip_norm:  # the scaled gradients to clip_norm x scale: the true ones to clip_norm
                gradients, _ = tf.clip_by_global_norm(gradients, self.clip_norm * scale, use_norm=scaled_norm)
            gradients = [g / replicas for g in gradients]
        self.optimizer.apply(gradients, self.model.trainable_variables)
        return scaled_norm / scale

    def _replica_eval_step(self, features, labels):
        mlm_weight_total, num_examples_total = self._global_totals(labels)
        outputs = self.model(features, training=False)
        shares = global_batch_shares(labels, outputs, mlm_weight_total, num_examples_total)
        in_top5 = keras.metrics.sparse_top_k_categorical_accuracy(
            labels["masked_lm_ids"], outputs["mlm_logits"], k=5
        )  # float32 [batch, max_predictions]: 1 where the label is among the 5 largest logits
        top5_hits = tf.reduce_sum(tf.cast(labels["masked_lm_weights"], tf.float32) * in_top5)
        top5_share = top5_hits / tf.maximum(mlm_weight_total, MLM_EPSILON)
        return tf.concat([shares, top5_share[tf.newaxis]], 0)
