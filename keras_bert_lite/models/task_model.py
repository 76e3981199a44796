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

    @property
    def layers(self):
        """The graph's layers, with those that belong to the encoder replaced by the encoder.

        Models that call the encoder's layers directly (`BertEncoder.sequence_output_at`) still
        list and save it as one nested layer, so `.keras` files keep one layout whichever way a
        model calls its encoder (and files saved before load). `summary()` shows the graph.
        """
        layers = super().layers
        encoder = self.__dict__.get("encoder")  # set after the functional graph is built
        if encoder is None:
            return layers
        encoder_layers = {id(layer) for layer in encoder.layers}
        return [encoder, *(layer for layer in layers if id(layer) not in encoder_layers)]

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
