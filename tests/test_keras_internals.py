"""The private Keras members keras_bert_lite relies on, checked against the installed Keras.

The text layers (`BertTokenizer`, `BertPackInputs`, `BertPreprocessor`, `MaskedLMMasker`) derive from
`keras_bert_lite.text.text_layer.TextLayer`, which sets
`_convert_input_args = False` and `_allow_non_tensor_positional_args = True`, as Keras' own
preprocessing layers and KerasHub's do, so that they accept Python strings and nested lists
positionally and see their inputs unconverted. Keras has no public switch for this, so setup.py
pins the Keras minor these tests passed with; a Keras that renames or ignores the members fails
here, naming the member, instead of failing in user code.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.text import BertPackInputs, BertPreprocessor, BertTokenizer, MaskedLMMasker
from keras_bert_lite.text.text_layer import TextLayer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "."]
MEMBERS = {"_convert_input_args": True, "_allow_non_tensor_positional_args": False}  # Keras' defaults


class _Seen(TextLayer):
    """Records what `call` receives, with the text layers' two settings."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = None

    def call(self, inputs):
        self.seen = inputs
        return tf.constant(0)


@pytest.mark.parametrize("member, default", sorted(MEMBERS.items()))
def test_keras_layers_still_have_the_member(member, default):
    layer = keras.layers.Layer()
    assert hasattr(layer, member), f"keras {keras.__version__}: keras.layers.Layer has no `{member}` any more"
    assert getattr(layer, member) is default, (
        f"keras {keras.__version__}: the default of keras.layers.Layer.{member} changed from {default}"
    )


def test_allow_non_tensor_positional_args_is_honoured():
    with pytest.raises(ValueError, match="Only input tensors may be passed as positional arguments"):
        keras.layers.Layer()(["a python string"])  # Keras' default: tensors only
    layer = _Seen()
    layer(["a python string"])
    assert layer.seen == ["a python string"], (
        f"keras {keras.__version__} no longer honours `_allow_non_tensor_positional_args`"
    )


def test_convert_input_args_is_honoured():
    array = np.ones(3, "float64")
    layer = _Seen()
    layer(array)
    assert layer.seen is array, f"keras {keras.__version__} no longer honours `_convert_input_args`"


def test_text_layers_set_the_members_and_take_python_strings_and_string_tensors():
    tokenizer = BertTokenizer(VOCAB)
    packer = BertPackInputs(8, start_of_sequence_id=2, end_of_segment_id=3)
    preprocessor = BertPreprocessor(VOCAB, seq_length=8)
    masker = MaskedLMMasker(vocab_size=len(VOCAB), mask_token_id=4, special_token_ids=[0, 2, 3])
    for layer in (tokenizer, packer, preprocessor, masker):
        assert layer._convert_input_args is False and layer._allow_non_tensor_positional_args is True, (
            f"{type(layer).__name__} no longer sets the members this test guards"
        )
    expected = [[5, 6, 8, 7, 9]]
    assert tokenizer(["The cats sat."]).to_list() == expected
    assert tokenizer(tf.constant(["The cats sat."])).to_list() == expected
    assert tokenizer("The cats sat.").numpy().tolist() == expected[0]
    assert packer([[[5, 6]]])["input_word_ids"].numpy().tolist() == [[2, 5, 6, 3, 0, 0, 0, 0]]
    from_strings = preprocessor(["The cats sat."])["input_word_ids"].numpy().tolist()
    assert from_strings == preprocessor(tf.constant(["The cats sat."]))["input_word_ids"].numpy().tolist()
    assert from_strings == [[2, 5, 6, 8, 7, 9, 3, 0]]
    masked = masker([[2, 5, 6, 7, 3]])
    assert set(masked) >= {"input_word_ids", "masked_lm_positions"}, sorted(masked)
