"""`.keras` files: models that they rebuild through their constructor, edits included
(`RebuiltModel`, and `EncoderTaskModel` for the models that hold a `BertEncoder`), and
`save_model`, which writes them atomically and without the optimizer's state.

Keras 3 (checked on 3.15) always writes a compiled model's optimizer variables into a `.keras`
file: `model.save(path, include_optimizer=False)` accepts the argument and ignores it. For
fine-tuned BERT that is AdamW's two slots per weight, making the file three times the size of
the model in every file meant for inference, export or sharing. Resuming training needs that
state, but training checkpoints keep it, not model files.

Example:

    >>> clf.fit(train, epochs=3)
    >>> save_model(clf, "out/clf.keras")        # weights and config, no Adam slots
    >>> clf = keras.saving.load_model("out/clf.keras")
"""

from __future__ import annotations

import os
import tempfile

import keras
import tensorflow as tf

from keras_bert_lite.atomic import copy_atomically


def save_model(model: keras.Model, filepath: str | os.PathLike, include_optimizer: bool = False) -> str:
    """Saves `model` as a `.keras` file; the optimizer's state only when asked.

    Without the optimizer, the file is written from a copy of the model rebuilt from its config
    (so the weights' memory is needed twice while saving): Keras saves whatever optimizer a
    model carries, and a copy that was never compiled carries none. The copy is not compiled,
    so `keras.saving.load_model` returns an uncompiled model; compile it to train again.

    The file is written to a local scratch folder, then copied into place atomically (see
    `keras_bert_lite.atomic`): a process killed while saving leaves the previous file or the
    new one, never a truncated archive that a later run would fail to load.

    Args:
        model: any Keras model that round-trips through its config (ours all do).
        filepath: destination ending in `.keras` (local or any `tf.io.gfile` path).
        include_optimizer: also save the optimizer (its config and slot variables).

    Returns:
        `filepath`.

    Raises:
        ValueError: `filepath` does not end in `.keras`.
    """
    filepath = os.fspath(filepath)
    if not filepath.endswith(".keras"):
        raise ValueError(f"save_model writes .keras files; got {filepath}.")
    source = model
    optimizer = getattr(model, "optimizer", None)
    if not include_optimizer and optimizer is not None and optimizer.variables:
        config = keras.saving.serialize_keras_object(model)
        config.pop("compile_config", None)  # compiling the copy would give it an optimizer again
        source = keras.saving.deserialize_keras_object(config)
        if len(source.weights) != len(model.weights):
            raise ValueError(
                f"{type(model).__name__} rebuilt from its config has {len(source.weights)} weights instead of "
                f"{len(model.weights)}; save it with include_optimizer=True."
            )
        for copy, original in zip(source.weights, model.weights):
            copy.assign(original)
    with tempfile.TemporaryDirectory() as scratch:
        local = os.path.join(scratch, os.path.basename(filepath))
        keras.saving.save_model(source, local)
        copy_atomically(local, filepath)
    return filepath


class RebuiltModel(keras.Model):
    """A functional model whose config holds constructor arguments plus the edits made since.

    Our models create their layers in code, so a `.keras` file rebuilds them by calling the
    constructor, then loads the weights. `quantize()` and `enable_lora()` change which variables a
    layer has (int8 kernels and scales; LoRA factors), so the calls are recorded in the config
    and repeated, in order, on the rebuilt model before its weights load: a quantized or LoRA model
    saves and loads like any other. Subclasses implement `constructor_config()`; the Keras objects
    among the arguments (an encoder, a preprocessor, a dtype policy) are serialized by `get_config`
    and rebuilt by `from_config`.
    """

    def constructor_config(self) -> dict:
        """The constructor arguments without `name` and `trainable`: JSON-able values or Keras objects."""
        raise NotImplementedError

    @property
    def edits(self) -> list[dict]:
        """The recorded `quantize` and `enable_lora` calls, oldest first, e.g.
        `[{"method": "quantize", "mode": "int8", "filters": None, "config": None}]`."""
        return list(getattr(self, "_recorded_edits", ()))

    def _record_edit(self, edit: dict) -> None:
        self._recorded_edits = (*self.edits, edit)

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """`keras.Model.quantize` (the same arguments), recorded so that `.keras` files of the result
        load. `filters` (layer paths to quantize) may be a regex string or a list of them; a callable
        works too, but such a model cannot be saved as a `.keras` file."""
        super().quantize(mode, config=config, filters=filters, **kwargs)
        self._record_edit({"method": "quantize", "mode": mode, "config": config, "filters": filters})

    def get_config(self):
        config = {**self.constructor_config(), "name": self.name, "trainable": self.trainable}
        if self.edits:
            if any(callable(edit.get("filters")) for edit in self.edits):
                raise ValueError(
                    f"{self.name}: quantize(filters=<a function>) cannot be stored in a .keras file; quantize "
                    "with a regex filter (or a list of them) to save the model."
                )
            config["edits"] = self.edits
        return keras.saving.serialize_keras_object(config)

    @classmethod
    def from_config(cls, config):
        config = _deserialized(config)
        edits = config.pop("edits", [])
        model = cls(**config)
        for edit in map(_deserialized, edits):
            getattr(model, edit.pop("method"))(**edit)
        return model


def _deserialized(config: dict) -> dict:
    """A copy of `config` with the Keras objects in it (dicts with a `class_name`) rebuilt."""
    return {
        key: keras.saving.deserialize_keras_object(value) if isinstance(value, dict) and "class_name" in value else value
        for key, value in config.items()
    }


class EncoderTaskModel(RebuiltModel):
    """A functional model that calls a `BertEncoder` (held as `self.encoder`) as one nested model.

    Its config holds the encoder (nested) plus the constructor arguments named in `CONFIG_ARGS`,
    read back from attributes of the same names, so `.keras` files rebuild the model through its
    constructor (which re-ties any heads to the encoder's layers) and then load the weights.
    `save` leaves the optimizer's state out unless asked (`save_model`).
    """

    CONFIG_ARGS: tuple[str, ...] = ()

    def constructor_config(self) -> dict:
        return {"encoder": self.encoder, **{name: getattr(self, name) for name in self.CONFIG_ARGS}}

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

    def save(self, filepath, overwrite: bool = True, **kwargs):
        """`keras.Model.save`, without the optimizer's state unless `include_optimizer=True`:
        `.keras` files are written by `save_model` (see why in the module docstring);
        other formats and arguments go to Keras.

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
