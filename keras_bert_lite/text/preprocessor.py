"""Raw strings to BERT encoder inputs: tokenizer + packer in one layer."""

from __future__ import annotations

from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_bert_lite.text.packer import BertPackInputs
from keras_bert_lite.text.tokenizer import BertTokenizer


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertPreprocessor(keras.layers.Layer):
    """Strings (or string pairs) in, `input_word_ids`/`input_mask`/`input_type_ids` out.

    Runs entirely in the TensorFlow graph, so it can be used in
    `tf.data.Dataset.map`, inside a Keras model, and in an exported SavedModel.

    Args:
      vocabulary: path of a `vocab.txt` or the list of tokens (see `BertTokenizer`).
      seq_length: length of the packed inputs, special tokens included.
      lower_case: `True` for uncased vocabularies (lower-case, strip accents).
      truncator: `"round_robin"` (default, keeps every segment) or `"waterfall"`.
      max_chars_per_token: words longer than this become `[UNK]`.
      **kwargs: standard layer arguments.

    Call arguments:
      inputs: a tf.string tensor [batch] (or a list of Python strings) of
        single texts, or a tuple/list of such tensors (text pairs, triples,
        ...) with the same batch size.

    Returns:
      dict of int32 [batch, seq_length] tensors `input_word_ids`, `input_mask`,
      `input_type_ids` (see `BertPackInputs`).

    Example:

    >>> prep = BertPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...                          "the", "cat", "sat", "."], seq_length=8)
    >>> prep((["The cat."], ["sat."]))["input_word_ids"].numpy().tolist()
    [[2, 5, 6, 8, 3, 7, 8, 3]]
    """

    def __init__(
        self,
        vocabulary: str | Sequence[str],
        seq_length: int = 128,
        lower_case: bool = True,
        truncator: str = "round_robin",
        max_chars_per_token: int = 100,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        self.tokenizer = BertTokenizer(
            vocabulary, lower_case=lower_case, max_chars_per_token=max_chars_per_token
        )
        self.packer = BertPackInputs(
            seq_length,
            start_of_sequence_id=self.tokenizer.cls_id,
            end_of_segment_id=self.tokenizer.sep_id,
            padding_id=self.tokenizer.pad_id,
            truncator=truncator,
        )

    @property
    def seq_length(self) -> int:
        return self.packer.seq_length

    def call(self, inputs):
        if isinstance(inputs, dict):
            raise TypeError(
                "BertPreprocessor takes a string tensor or a tuple of string tensors, not a dict."
            )
        if isinstance(inputs, (list, tuple)) and all(isinstance(t, (str, bytes)) for t in inputs):
            inputs = tf.constant(inputs, dtype=tf.string)  # a plain list of texts is one batch
        texts = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not texts:
            raise ValueError("BertPreprocessor needs at least one string tensor.")
        segments = [self.tokenizer(tf.convert_to_tensor(t, dtype=tf.string)) for t in texts]
        return self.packer(segments if len(segments) > 1 else segments[0])

    def compute_output_spec(self, inputs):
        first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        return {
            name: keras.KerasTensor((first.shape[0], self.seq_length), dtype="int32")
            for name in ("input_word_ids", "input_mask", "input_type_ids")
        }

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            vocabulary=self.tokenizer.vocabulary,
            seq_length=self.seq_length,
            lower_case=self.tokenizer.lower_case,
            truncator=self.packer.truncator,
            max_chars_per_token=self.tokenizer.max_chars_per_token,
        )
        return config
