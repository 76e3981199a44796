"""`EncoderTaskModel`: the base of the functional models built around a `BertEncoder`."""

from __future__ import annotations

import keras

from keras_bert_lite.models.rebuild import RebuiltModel


class EncoderTaskModel(RebuiltModel):
    """A functional model that calls a `BertEncoder` (held as `self.encoder`) as one nested model.

    Serializes the encoder (nested) plus the constructor arguments named in `CONFIG_ARGS`, read
    back from attributes of the same names, so `.keras` files rebuild the model through its
    constructor (which re-ties any heads to the encoder's layers) and then load the weights.
    """

    CONFIG_ARGS: tuple[str, ...] = ()

    def constructor_config(self) -> dict:
        config = {"encoder": keras.saving.serialize_keras_object(self.encoder)}
        for name in self.CONFIG_ARGS:
            value = getattr(self, name)
            config[name] = list(value) if isinstance(value, tuple) else value
        return config

    @classmethod
    def from_constructor_config(cls, config: dict) -> EncoderTaskModel:
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
