"""`.keras` files of our models: `RebuiltModel`, the models that they rebuild through their
constructor (and `EncoderTaskModel`, those that hold a `BertEncoder`), and `save_model`, which
writes any model atomically and without the optimizer.

Keras 3 (checked on 3.15) writes a compiled model's optimizer into a `.keras` file, its variables
and its config: `keras.saving.save_model(model, path, include_optimizer=False)` accepts the
argument and ignores it. For fine-tuned BERT that is AdamW's two slots per weight, making the file
three times the size of the model in every file meant for inference, export or sharing. Resuming
training needs that state, but training checkpoints keep it, not model files. `save_model` (and
`model.save` of every model here) leaves it out unless asked.

Edits Keras offers on any model are kept the way Keras keeps them, so a `.keras` file holds state,
not a log of calls: quantized layers are named with their dtype policies in a
`keras.dtype_policies.DTypePolicyMap` (the model's `dtype` in its config, as KerasHub's
backbones do), which makes Keras' own layers build quantized when the model is rebuilt; LoRA is
the encoder's `lora_rank` argument, as it is `Dense`'s (see `BertEncoder.enable_lora`).

Example:

    >>> clf.fit(train, epochs=3)
    >>> clf.save("out/clf.keras")              # weights and config, no optimizer
    >>> clf = keras.saving.load_model("out/clf.keras")
"""

from __future__ import annotations

import contextlib
import os
import tempfile

import keras
import tensorflow as tf

from keras_bert_lite.atomic import copy_atomically


def save_model(model: keras.Model, filepath: str | os.PathLike, include_optimizer: bool = False) -> str:
    """Saves `model` as a `.keras` file; its optimizer (state and config) only when asked.

    Keras saves the optimizer a model holds, so without it the model is saved with none for the
    time of the save (`without_optimizer`): no copy of the weights is made, and the file has no
    `compile_config`, so `keras.saving.load_model` returns an uncompiled model (task models
    compile with their defaults on `fit`; or compile it to train again).

    The file is written to a local scratch folder, then copied into place atomically (see
    `keras_bert_lite.atomic`): a process killed while saving leaves the previous file or the
    new one, never a truncated archive that a later run would fail to load.

    Args:
        model: any Keras model.
        filepath: destination ending in `.keras` (local or any `tf.io.gfile` path).
        include_optimizer: also save the optimizer (its config and slot variables), so that the
            loaded model resumes training with them.

    Returns:
        `filepath`.

    Raises:
        ValueError: `filepath` does not end in `.keras`.
    """
    filepath = os.fspath(filepath)
    if not filepath.endswith(".keras"):
        raise ValueError(f"save_model writes .keras files; got {filepath}.")
    with tempfile.TemporaryDirectory() as scratch:
        local = os.path.join(scratch, os.path.basename(filepath))
        with contextlib.nullcontext() if include_optimizer else without_optimizer(model):
            keras.saving.save_model(model, local)
        copy_atomically(local, filepath)
    return filepath


@contextlib.contextmanager
def without_optimizer(model: keras.Model):
    """`model` with no optimizer and not compiled, for the time of the block (a save), then as it was.

    Keras' `.keras` writer saves the `optimizer` a model holds (its variables) and, for a compiled
    model, `get_compile_config()` (the optimizer's config among the rest); a model that holds none
    and is not compiled writes neither. The optimizer object itself is kept and put back, so
    training goes on with its state.
    """
    optimizer, compiled = getattr(model, "optimizer", None), model.compiled
    model.optimizer, model.compiled = None, False
    try:
        yield model
    finally:
        model.optimizer, model.compiled = optimizer, compiled


def quantized_policies(model: keras.Model, skip: keras.Model | None = None) -> dict[str, keras.DTypePolicy]:
    """Layer path -> dtype policy of every quantized layer of `model`, but those inside `skip`.

    Walks the model's layers and the sub-layers they hold as public attributes (how our layers
    keep theirs), as `keras.Model.quantize` finds the layers it quantizes.
    """
    seen = {id(layer) for layer in _walk(skip)} if skip is not None else set()
    policies = {}
    for layer in _walk(model):
        if id(layer) in seen or layer.quantization_mode is None:
            continue
        policy = layer.dtype_policy
        if isinstance(policy, keras.dtype_policies.DTypePolicyMap):
            policy = policy[layer.path]
        policies[layer.path] = policy
    return policies


def _walk(model: keras.Model) -> list[keras.layers.Layer]:
    """The layers of `model` and, depth first, the layers they hold as public attributes."""
    found, seen, stack = [], {id(model)}, list(model.layers)
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        found.append(layer)
        if isinstance(layer, keras.Model):
            stack += layer.layers
        for name, value in vars(layer).items():
            values = value if isinstance(value, (list, tuple)) else [value]
            if not name.startswith("_"):
                stack += [v for v in values if isinstance(v, keras.layers.Layer)]
    return found


def default_policy(policy) -> keras.DTypePolicy:
    """`policy`, or the default policy of a `DTypePolicyMap`."""
    policy = keras.dtype_policies.get(policy)
    return policy.default_policy if isinstance(policy, keras.dtype_policies.DTypePolicyMap) else policy


class RebuiltModel(keras.Model):
    """A functional model whose config holds its constructor arguments.

    Our models create their layers in code, so a `.keras` file rebuilds them by calling the
    constructor, then loads the weights. Subclasses implement `constructor_config()`; the Keras
    objects among the arguments (an encoder, a preprocessor, a dtype policy) are serialized by
    `get_config` and rebuilt by `from_config`. A model with quantized layers (`quantize()`) has
    its `dtype` in the config as a `DTypePolicyMap` naming them, over `dtype_default()`, so the
    constructor must give `dtype` to the layers it makes (`BertEncoder` does, and task models to
    their heads). `save` leaves the optimizer out unless asked (`save_model`).
    """

    def constructor_config(self) -> dict:
        """The constructor arguments without `name` and `trainable`: JSON-able values or Keras objects."""
        raise NotImplementedError

    def dtype_default(self) -> keras.DTypePolicy:
        """The dtype policy of the layers this model makes (the `DTypePolicyMap`'s default)."""
        return default_policy(self.dtype_policy)

    def nested_model(self) -> keras.Model | None:
        """A model held in the config whose own config names its own quantized layers (the encoder)."""
        return None

    def get_config(self):
        config = {**self.constructor_config(), "name": self.name, "trainable": self.trainable}
        quantized = quantized_policies(self, skip=self.nested_model())
        if quantized:
            config["dtype"] = keras.dtype_policies.DTypePolicyMap(self.dtype_default(), quantized)
        return keras.saving.serialize_keras_object(config)

    @classmethod
    def from_config(cls, config):
        return cls(**{
            key: keras.saving.deserialize_keras_object(value) if isinstance(value, dict) and "class_name" in value
            else value
            for key, value in config.items()
        })

    def save(self, filepath, overwrite: bool = True, **kwargs):
        """`keras.Model.save`, without the optimizer unless `include_optimizer=True`: `.keras`
        files are written by `save_model` (see why in the module docstring); other formats and
        arguments go to Keras.

        Raises:
            FileExistsError: `overwrite=False` and `filepath` exists.
        """
        path = os.fspath(filepath)
        include_optimizer = kwargs.pop("include_optimizer", False)
        if not path.endswith(".keras") or kwargs:
            return super().save(filepath, overwrite=overwrite, include_optimizer=include_optimizer, **kwargs)
        if not overwrite and tf.io.gfile.exists(path):
            raise FileExistsError(f"{path} exists; pass overwrite=True to replace it.")
        save_model(self, path, include_optimizer=include_optimizer)


class EncoderTaskModel(RebuiltModel):
    """A functional model that calls a `BertEncoder` (held as `self.encoder`) as one nested model.

    Its config holds the encoder (nested) plus the constructor arguments named in `CONFIG_ARGS`,
    read back from attributes of the same names, so `.keras` files rebuild the model through its
    constructor (which re-ties any heads to the encoder's layers) and then load the weights.
    Constructors make their heads with `head_dtype(encoder, dtype)`.

    `UNREAD_ENCODER_LAYERS` names the encoder's sub-layers (attributes) the model's outputs do
    not depend on, e.g. `("pooler",)` for models on `sequence_output`: their weights are not among
    the model's trainable weights, so `fit` leaves them as they are, and Keras, which trains the
    model's `trainable_variables`, finds no variable without a gradient to warn about. The
    encoder itself (and any other model on it) trains them as before.
    """

    CONFIG_ARGS: tuple[str, ...] = ()
    UNREAD_ENCODER_LAYERS: tuple[str, ...] = ()

    @staticmethod
    def head_dtype(encoder, dtype=None):
        """The dtype policy of the heads: `dtype` (from a `.keras` file: a `DTypePolicyMap` naming
        the quantized head layers) or, by default, the encoder's."""
        return encoder.dtype_policy if dtype is None else dtype

    def constructor_config(self) -> dict:
        return {"encoder": self.encoder, **{name: getattr(self, name) for name in self.CONFIG_ARGS}}

    def dtype_default(self) -> keras.DTypePolicy:
        return default_policy(self.encoder.dtype_policy)

    def nested_model(self) -> keras.Model:
        return self.encoder

    def _unread(self) -> set[int]:
        return {id(w) for name in self.UNREAD_ENCODER_LAYERS for w in getattr(self.encoder, name).weights}

    @property
    def trainable_weights(self):
        unread = self._unread()
        return [w for w in super().trainable_weights if id(w) not in unread]

    @property
    def trainable_variables(self):
        unread = self._unread()
        return [v for v in super().trainable_variables if id(v) not in unread]

    @property
    def non_trainable_weights(self):
        trainable = {id(w) for w in self.trainable_weights}
        return [w for w in self.weights if id(w) not in trainable]

    @property
    def non_trainable_variables(self):
        trainable = {id(v) for v in self.trainable_variables}
        return [v for v in self.variables if id(v) not in trainable]

    def make_train_function(self, force: bool = False):
        """Keras' train function, with the optimizer's variables made before it is traced.

        Without a distribution strategy Keras makes them inside the first traced train step, and
        TensorFlow then traces that step a second time (a `tf.function` that creates variables is
        traced again without them), which doubles the set-up time of the first `fit`. Building them
        here, as Keras does under a strategy, makes the same zero-initialised variables for the
        same `trainable_variables`, so training is unchanged. (Metrics compiled by name, e.g.
        `metrics=["accuracy"]`, are still built in the first trace, as Keras does.)
        """
        optimizer = getattr(self, "optimizer", None)  # set by `compile`
        if self.built and optimizer is not None and not optimizer.built:
            optimizer.build(self.trainable_variables)
        return super().make_train_function(force)
