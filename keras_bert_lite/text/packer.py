"""Packs token segments into BERT's fixed-length model inputs."""

from __future__ import annotations

import keras
import tensorflow as tf

from keras_bert_lite.layers import checks
from keras_bert_lite.text.text_layer import TextLayer

OUTPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# Truncator name -> tensorflow_text trimmer class name (tensorflow_text is imported where it is
# used, as in `tokenizer`).
_TRIMMERS = {"round_robin": "RoundRobinTrimmer", "waterfall": "WaterfallTrimmer"}


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertPackInputs(TextLayer):
    """`[CLS] A [SEP] B [SEP] ...` plus padding, as BERT's three int32 inputs.

    Segments that do not fit are truncated at their ends. `"round_robin"` hands out the free positions one at
    a time to each segment in turn, so every segment keeps tokens; for two segments this is exactly the
    original BERT `_truncate_seq_pair` (the longer one loses tokens first, the first segment keeps the odd one
    out). `"waterfall"` fills segments in order and drops the tail.

    Args:
        seq_length: length of the packed sequence, special tokens included.
        start_of_sequence_id: id of `[CLS]`.
        end_of_segment_id: id of `[SEP]`, appended after every segment.
        padding_id: id of `[PAD]`.
        truncator: `"round_robin"` (default) or `"waterfall"`.
        **kwargs: standard layer arguments.

    Call arguments:
        segments: one `tf.RaggedTensor` of token ids [batch, (tokens)] (or [batch, (words), (pieces)], which
            is flattened), or a list/tuple of them with the same batch size.

    Returns:
        dict of int32 [batch, seq_length] tensors: `input_word_ids`, `input_mask` (1 for tokens, 0 for
        padding) and `input_type_ids` (0 for `[CLS]`, the first segment and its `[SEP]`, 1 for the second,
        ...; 0 on padding).

    Example:

        >>> packer = BertPackInputs(8, start_of_sequence_id=101, end_of_segment_id=102)
        >>> out = packer([tf.ragged.constant([[7, 8, 9]]), tf.ragged.constant([[5, 6, 4, 3]])])
        >>> out["input_word_ids"].numpy().tolist()
        [[101, 7, 8, 102, 5, 6, 4, 102]]
        >>> out["input_type_ids"].numpy().tolist()
        [[0, 0, 0, 0, 1, 1, 1, 1]]
    """

    _CONFIG_ARGS = ("seq_length", "start_of_sequence_id", "end_of_segment_id", "padding_id", "truncator")

    def __init__(
        self,
        seq_length: int,
        start_of_sequence_id: int,
        end_of_segment_id: int,
        padding_id: int = 0,
        truncator: str = "round_robin",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if truncator not in _TRIMMERS:
            raise ValueError(
                f"truncator must be one of {sorted(_TRIMMERS)}, got {truncator!r}."
            )
        if seq_length < 2:
            raise ValueError(
                f"seq_length={seq_length} cannot hold [CLS] and [SEP]; it must be at least 2 "
                "(2 + number of segments for segment pairs and more)."
            )
        self.seq_length = int(seq_length)
        self.start_of_sequence_id = int(start_of_sequence_id)
        self.end_of_segment_id = int(end_of_segment_id)
        self.padding_id = int(padding_id)
        self.truncator = truncator

    def call(self, segments):
        import tensorflow_text as tf_text

        if isinstance(segments, dict):
            raise TypeError("BertPackInputs takes a RaggedTensor or a list of them, not a dict.")
        if not isinstance(segments, (list, tuple)):
            segments = [segments]
        segments = [self._as_ragged_ids(s) for s in segments]
        if not segments:
            raise ValueError("BertPackInputs needs at least one segment.")
        num_special = 1 + len(segments)
        if self.seq_length < num_special:
            raise ValueError(
                f"seq_length={self.seq_length} cannot hold the {num_special} special tokens of "
                f"{len(segments)} segments ([CLS] and one [SEP] per segment)."
            )
        budget = self.seq_length - num_special
        if len(segments) == 1:
            trimmed = [segments[0][:, :budget]]  # what either truncator does to one segment
        else:
            segments = _check_same_batch_size(segments)
            trimmed = getattr(tf_text, _TRIMMERS[self.truncator])(budget).trim(segments)
        word_ids, type_ids = self._combine(trimmed)
        input_word_ids, input_mask = tf_text.pad_model_inputs(
            word_ids, self.seq_length, pad_value=self.padding_id
        )
        input_type_ids, _ = tf_text.pad_model_inputs(type_ids, self.seq_length, pad_value=0)
        return dict(zip(OUTPUT_NAMES, (input_word_ids, input_mask, input_type_ids)))

    def _combine(self, trimmed: list[tf.RaggedTensor]) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
        """`[CLS] A [SEP] B [SEP] ...` as ragged word ids and type ids [batch, (tokens)], both int32.

        Computes what `tf_text.combine_segments` does, but from dense columns: each segment padded to its
        longest row, the [CLS]/[SEP] columns, and a boolean mask of the real tokens that
        `tf.ragged.boolean_mask` applies. `combine_segments` concatenates ragged tensors along axis 1,
        which transposes integer row indices; oneDNN's layout pass then logs a false
        "DT_INT64 ... only supported on AVX-512" error line on every run.
        """
        special = tf.ones_like(tf.cast(trimmed[0].row_lengths(), tf.int32))[:, tf.newaxis]  # [batch, 1]
        word_columns = [special * self.start_of_sequence_id]
        type_columns = [special * 0]
        keep_columns = [tf.ones_like(special, tf.bool)]
        for type_id, segment in enumerate(trimmed):
            dense = segment.to_tensor(self.padding_id)
            word_columns += [dense, special * self.end_of_segment_id]
            type_columns += [tf.fill(tf.shape(dense), type_id), special * type_id]
            keep_columns += [
                tf.sequence_mask(tf.cast(segment.row_lengths(), tf.int32), tf.shape(dense)[1]),
                tf.ones_like(special, tf.bool),
            ]
        keep = tf.concat(keep_columns, axis=1)
        return (
            tf.ragged.boolean_mask(tf.concat(word_columns, axis=1), keep),
            tf.ragged.boolean_mask(tf.concat(type_columns, axis=1), keep),
        )

    @staticmethod
    def _as_ragged_ids(segment) -> tf.RaggedTensor:
        if not isinstance(segment, tf.RaggedTensor):
            segment = tf.convert_to_tensor(segment)
            if segment.shape.rank != 2:
                raise ValueError(
                    f"A dense segment must have shape [batch, tokens], got {segment.shape}."
                )
            segment = tf.RaggedTensor.from_tensor(segment)
        if segment.shape.rank == 3:
            segment = segment.merge_dims(-2, -1)
        if segment.shape.rank != 2 or not segment.dtype.is_integer:
            raise ValueError(
                "Each segment must be integer token ids of shape [batch, (tokens)], got "
                f"{segment.dtype.name} with shape {segment.shape}."
            )
        return tf.cast(segment, tf.int32)

    def compute_output_spec(self, segments):
        first = segments[0] if isinstance(segments, (list, tuple)) else segments
        shape = (*first.shape[:1], self.seq_length)  # (seq_length,) for one unbatched example
        return {name: keras.KerasTensor(shape, dtype="int32") for name in OUTPUT_NAMES}


def _check_same_batch_size(segments: list[tf.RaggedTensor]) -> list[tf.RaggedTensor]:
    """Fails clearly (at trace time when shapes are known) on mismatched batches."""
    sizes = [s.shape[0] for s in segments]
    if None not in sizes:
        if len(set(sizes)) > 1:
            raise ValueError(f"All segments must have the same batch size, got {sizes}.")
        return segments
    message = "All segments must have the same batch size."
    same = [tf.debugging.assert_equal(s.nrows(), segments[0].nrows(), message=message) for s in segments[1:]]
    return [checks.after(same, s) for s in segments]
