"""`ConfigLayer`: the base of the layers whose config is their constructor arguments."""

import keras


class ConfigLayer(keras.layers.Layer):
    """A Keras layer whose `get_config` adds the attributes named in `_CONFIG_ARGS`.

    Subclasses keep each constructor argument as an attribute of the same name and list them in
    `_CONFIG_ARGS`, so that `from_config(get_config())` rebuilds the layer.
    """

    _CONFIG_ARGS: tuple[str, ...] = ()

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({name: getattr(self, name) for name in self._CONFIG_ARGS})
        return config
