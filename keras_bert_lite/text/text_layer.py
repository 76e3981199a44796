"""`TextLayer`: the base of the layers that take text (strings, ragged pieces) rather than tensors.

Keras converts a layer's positional inputs to tensors and accepts only tensors there; a text layer
must see Python strings and nested lists as they are. Keras has no public switch for this, so this
one class sets the two private members Keras' own preprocessing layers (and KerasHub's) set;
tests/test_keras_internals.py fails, naming the member, if a Keras release renames or ignores one.
"""

from keras_bert_lite.layers.base import ConfigLayer


class TextLayer(ConfigLayer):
    """A Keras layer whose `call` gets its inputs unconverted: strings, lists and ragged tensors.

    Built on construction: its tables come from its arguments, not from the input shapes.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.built = True
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
