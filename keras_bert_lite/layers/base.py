"""`ConfigLayer`: the base of the layers whose config is their constructor arguments; and
`LoraDense`, the `Dense` they are made of."""

import keras


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class LoraDense(keras.layers.Dense):
    """`keras.layers.Dense` whose LoRA factors train again after its weights load.

    Keras' `Dense` saves its kernel with the LoRA update merged in and, on load into a layer with
    LoRA enabled, sets both factors to zero: the outputs are right, but with `lora_kernel_a` and
    `lora_kernel_b` both zero each one's gradient is a product with the other, zero, so a further
    `fit` trains neither (no error, no warning). This layer then draws `lora_kernel_a` anew, as
    `enable_lora` does (He-uniform; `lora_kernel_b` stays zero): the outputs are unchanged
    (A @ 0 adds nothing) and training resumes as LoRA on the merged kernel, as if
    `enable_lora(rank)` had been called on the loaded model. The factors themselves, to train
    further from where they were or to share without the model, go in LoRA weight files
    (`BertEncoder.save_lora_weights`).
    """

    def quantize(self, mode=None, type_check=True, config=None):
        # Keras' `Dense.quantize` refuses subclasses unless `type_check=False`, in case they compute
        # otherwise; this one computes as `Dense` (only loading differs), so it quantizes as one.
        super().quantize(mode, type_check=False, config=config)

    def load_own_variables(self, store):
        super().load_own_variables(store)
        if self.lora_enabled:
            initializer = keras.initializers.HeUniform()  # `Dense.enable_lora`'s default `a_initializer`
            self.lora_kernel_a.assign(initializer(self.lora_kernel_a.shape, self.lora_kernel_a.dtype))


class ConfigLayer(keras.layers.Layer):
    """A Keras layer whose `get_config` adds the attributes named in `_CONFIG_ARGS`.

    Subclasses keep each constructor argument as an attribute of the same name and list them in
    `_CONFIG_ARGS`, so that `from_config(get_config())` rebuilds the layer. The BERT layers make
    their sub-layers with `_dense`, `_layer_norm` and `_dropout`: with this layer's dtype policy
    (so that a mixed policy, or a `DTypePolicyMap` naming quantized layers, reaches every weight),
    BERT's truncated-normal kernel initializer of stddev `self.initializer_range`, and the
    LayerNorm epsilon `self.layer_norm_eps`.
    """

    _CONFIG_ARGS: tuple[str, ...] = ()

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({name: getattr(self, name) for name in self._CONFIG_ARGS})
        return config

    def _dense(self, units: int, name: str, activation=None) -> LoraDense:
        initializer = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        return LoraDense(units, activation=activation, kernel_initializer=initializer, dtype=self.dtype_policy, name=name)

    def _layer_norm(self, name: str) -> keras.layers.LayerNormalization:
        return keras.layers.LayerNormalization(epsilon=self.layer_norm_eps, dtype=self.dtype_policy, name=name)

    def _dropout(self, rate: float, name: str) -> keras.layers.Dropout:
        return keras.layers.Dropout(rate, dtype=self.dtype_policy, name=name)
