"""`ConfigLayer`: the base of the layers whose config is their constructor arguments."""

import keras


class ConfigLayer(keras.layers.Layer):
    """A Keras layer whose `get_config` adds the attributes named in `_CONFIG_ARGS`.

    Subclasses keep each constructor argument as an attribute of the same name and list them in
    `_CONFIG_ARGS`, so that `from_config(get_config())` rebuilds the layer. The BERT layers make
    their sub-layers with `_dense`, `_layer_norm` and `_dropout`: with this layer's dtype policy
    (so that a mixed policy reaches every weight), BERT's truncated-normal kernel initializer of
    stddev `self.initializer_range`, and the LayerNorm epsilon `self.layer_norm_eps`.
    """

    _CONFIG_ARGS: tuple[str, ...] = ()

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({name: getattr(self, name) for name in self._CONFIG_ARGS})
        return config

    def _dense(self, units: int, name: str, activation=None) -> keras.layers.Dense:
        initializer = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        return keras.layers.Dense(
            units, activation=activation, kernel_initializer=initializer, dtype=self.dtype_policy, name=name
        )

    def _layer_norm(self, name: str) -> keras.layers.LayerNormalization:
        return keras.layers.LayerNormalization(epsilon=self.layer_norm_eps, dtype=self.dtype_policy, name=name)

    def _dropout(self, rate: float, name: str) -> keras.layers.Dropout:
        return keras.layers.Dropout(rate, dtype=self.dtype_policy, name=name)
