"""`.keras` files without the optimizer's state, written atomically.

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
