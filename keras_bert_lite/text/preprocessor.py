"""Raw strings to BERT encoder inputs: tokenizer + packer in one layer."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_bert_lite.text.packer import BertPackInputs
from keras_bert_lite.text.text_layer import TextLayer
from keras_bert_lite.text.tokenizer import BertTokenizer


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertPreprocessor(TextLayer):
    """Strings (or string pairs) in, `input_word_ids`/`input_mask`/`input_type_ids` out.

    Runs entirely in the TensorFlow graph, so it can be used in `tf.data.Dataset.map`, inside a Keras
    model, and in an exported SavedModel.

    Args:
        vocabulary, lower_case, max_chars_per_token, strip_accents, special_tokens_in_strings,
            preserve_unused_tokens: the `BertTokenizer` arguments.
        seq_length: length of the packed inputs, special tokens included; settable later, also
            under KerasHub's name `sequence_length`.
        truncator: `"round_robin"` (default, keeps every segment) or `"waterfall"` (see `BertPackInputs`).
        **kwargs: standard layer arguments.

    Call arguments:
        inputs: a tf.string tensor [batch] (or a list of Python strings) of single texts, or a tuple/list
            of such tensors (text pairs, triples, ...) with the same batch size. A scalar string (or a tuple
            of scalars) is one unbatched example, as in KerasHub's preprocessors and Hugging Face's
            tokenizers, so `dataset.map(preprocessor)` works before `dataset.batch(...)` too.

    Returns:
        dict of int32 [batch, seq_length] tensors (or [seq_length] for scalar inputs) `input_word_ids`,
        `input_mask`, `input_type_ids` (see `BertPackInputs`).

    Example:

        >>> prep = BertPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
        ...                          "the", "cat", "sat", "."], seq_length=8)
        >>> prep((["The cat."], ["sat."]))["input_word_ids"].numpy().tolist()
        [[2, 5, 6, 8, 3, 7, 8, 3]]
        >>> prep("The cat sat.")["input_word_ids"].numpy().tolist()
        [2, 5, 6, 7, 8, 3, 0, 0]
    """

    def __init__(
        self,
        vocabulary: str | Sequence[str],
        seq_length: int = 128,
        lower_case: bool = True,
        truncator: str = "round_robin",
        max_chars_per_token: int = 100,
        strip_accents: bool | None = None,
        special_tokens_in_strings: bool = False,
        preserve_unused_tokens: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.tokenizer = BertTokenizer(
            vocabulary,
            lower_case=lower_case,
            max_chars_per_token=max_chars_per_token,
            strip_accents=strip_accents,
            special_tokens_in_strings=special_tokens_in_strings,
            preserve_unused_tokens=preserve_unused_tokens,
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
        """The packed length; settable (also as `sequence_length`, KerasHub's name), e.g. to pack
        shorter inputs for serving: the tokenizer's tables are kept."""
        return self.packer.seq_length

    @seq_length.setter
    def seq_length(self, value: int) -> None:
        if not isinstance(value, numbers.Integral) or value < 2:
            raise ValueError(f"seq_length must be an integer of at least 2 ([CLS] and [SEP]), got {value!r}.")
        self.packer.seq_length = int(value)

    sequence_length = seq_length

    def call(self, inputs):
        texts = _as_string_segments(inputs)
        ranks = {t.shape.rank for t in texts}
        if ranks == {0}:  # one unbatched example
            outputs = self.call(tuple(t[tf.newaxis] for t in texts))
            return {name: value[0] for name, value in outputs.items()}
        if ranks != {1}:
            shapes = ", ".join(str(t.shape) for t in texts)
            raise ValueError(
                "BertPreprocessor expects a batch of strings (shape [batch]), a scalar string for one "
                f"example, or a tuple of either (all the same rank) for text pairs; got shapes {shapes}."
            )
        segments = [self.tokenizer(t) for t in texts]
        return self.packer(segments if len(segments) > 1 else segments[0])

    def count_truncated(self, inputs) -> int:
        """How many examples of the batch `inputs` (texts [batch], or a tuple of them for pairs)
        have more word pieces than `seq_length` holds with [CLS] and a [SEP] per segment: those
        the packer cuts (the model sees only their first pieces)."""
        texts = _as_string_segments(inputs)
        pieces = sum(self.tokenizer(text).row_lengths() for text in texts)
        return int(tf.reduce_sum(tf.cast(pieces + len(texts) + 1 > self.seq_length, tf.int32)))

    def compute_output_spec(self, inputs):
        return self.packer.compute_output_spec(inputs)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({name: getattr(self.tokenizer, name) for name in BertTokenizer._CONFIG_ARGS},
                      seq_length=self.seq_length, truncator=self.packer.truncator)
        return config


def _as_string_segments(inputs) -> list[tf.Tensor]:
    """The call's inputs as a list of tf.string tensors, one per segment."""
    if isinstance(inputs, dict):
        raise TypeError("BertPreprocessor takes a string tensor or a tuple of string tensors, not a dict.")
    if isinstance(inputs, (list, tuple)) and all(isinstance(t, (str, bytes)) for t in inputs):
        inputs = tf.constant(inputs, dtype=tf.string)  # a plain list of texts is one batch
    texts = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    segments = [tf.convert_to_tensor(text) for text in texts]
    for segment in segments:
        if segment.dtype != tf.string:
            raise TypeError(f"BertPreprocessor expects tf.string input, got {segment.dtype.name}.")
    return segments
