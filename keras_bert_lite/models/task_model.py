"""`EncoderTaskModel`: the base of the functional models built around a `BertEncoder`."""

from __future__ import annotations

import keras


class EncoderTaskModel(keras.Model):
    """A functional model that holds a `BertEncoder` as `self.encoder`.

    Serializes the encoder (nested) plus the constructor arguments named in `CONFIG_ARGS`, read
    back from attributes of the same names, so `.keras` files rebuild the model through its
    constructor (which re-ties any heads to the encoder's layers) and then load the weights.
    """

    CONFIG_ARGS: tuple[str, ...] = ()

    def get_config(self):
        config = {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "name": self.name,
            "trainable": self.trainable,
        }
        for name in self.CONFIG_ARGS:
            value = getattr(self, name)
            config[name] = list(value) if isinstance(value, tuple) else value
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
