"""Packs token segments into BERT's fixed-length model inputs."""

from __future__ import annotations

import keras
import tensorflow as tf

# tensorflow_text (~120 MB resident) is imported where it is used, so that training from
# TFRecords does not load it. Truncator name -> tensorflow_text trimmer class name.
_TRIMMERS = {"round_robin": "RoundRobinTrimmer", "waterfall": "WaterfallTrimmer"}


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertPackInputs(keras.layers.Layer):
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
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
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
            lengths = [tf.minimum(segments[0].row_lengths(), budget)]  # what either truncator keeps of one
        else:
            import tensorflow_text as tf_text

            segments = _check_same_batch_size(segments)
            segments = getattr(tf_text, _TRIMMERS[self.truncator])(budget).trim(segments)
            lengths = [s.row_lengths() for s in segments]
        return self._pack(segments, tf.cast(tf.stack(lengths, axis=1), tf.int32), budget)

    def _pack(self, segments: list[tf.RaggedTensor], lengths: tf.Tensor, budget: int) -> dict[str, tf.Tensor]:
        """Lays out segments [batch, (tokens)] of which the first `lengths` (int32 [batch, segments])
        tokens are kept, at most `budget` in all, as the three [batch, seq_length] inputs.

        Every output position is computed densely: which segment it falls in, and there either the
        segment's token (gathered from the segments padded side by side), its [SEP], [CLS] or padding.
        Ragged concatenation (`tf_text.combine_segments`) would transpose its row indices, which makes
        oneDNN log a false "DT_INT64 ... only supported on AVX-512" error on every process.
        """
        width = max(budget, 1)  # columns per padded segment (budget 0 keeps no token: one dummy)
        dense = tf.concat(
            [s.to_tensor(self.padding_id, shape=[None, width]) for s in segments], axis=1
        )  # [batch, segments * width]
        # [SEP] of segment i sits at 1 + sum_{j <= i} (lengths_j + 1) - 1; segment i starts after the
        # previous [SEP] (or [CLS]).
        separators = tf.cumsum(lengths + 1, axis=1)
        starts = tf.concat([tf.ones_like(separators[:, :1]), separators[:, :-1] + 1], axis=1)
        positions = tf.range(self.seq_length)[tf.newaxis, :]
        # The segment a position belongs to: how many [SEP]s come before it.
        segment = tf.reduce_sum(
            tf.cast(positions[:, :, tf.newaxis] > separators[:, tf.newaxis, :], tf.int32), axis=2
        )  # [batch, seq_length]
        is_token = positions <= separators[:, -1:]
        within = tf.minimum(segment, len(segments) - 1)
        index = tf.clip_by_value(positions - tf.gather(starts, within, batch_dims=1), 0, width - 1)
        tokens = tf.gather(dense, within * width + index, batch_dims=1)
        word_ids = tf.where(
            tf.equal(positions, tf.gather(separators, within, batch_dims=1)), self.end_of_segment_id, tokens
        )
        word_ids = tf.where(tf.equal(positions, 0), self.start_of_sequence_id, word_ids)
        return {
            "input_word_ids": tf.where(is_token, word_ids, self.padding_id),
            "input_mask": tf.cast(is_token, tf.int32),
            "input_type_ids": tf.where(is_token, segment, 0),
        }

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
        shape = (first.shape[0], self.seq_length)
        return {
            name: keras.KerasTensor(shape, dtype="int32")
            for name in ("input_word_ids", "input_mask", "input_type_ids")
        }

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            seq_length=self.seq_length,
            start_of_sequence_id=self.start_of_sequence_id,
            end_of_segment_id=self.end_of_segment_id,
            padding_id=self.padding_id,
            truncator=self.truncator,
        )
        return config


def _check_same_batch_size(segments: list[tf.RaggedTensor]) -> list[tf.RaggedTensor]:
    """Fails clearly (at trace time when shapes are known) on mismatched batches."""
    sizes = [s.shape[0] for s in segments]
    if None not in sizes and len(set(sizes)) > 1:
        raise ValueError(f"All segments must have the same batch size, got {sizes}.")
    if len(segments) == 1 or None not in sizes:
        return segments
    with tf.control_dependencies([
        tf.debugging.assert_equal(
            s.nrows(), segments[0].nrows(), message="All segments must have the same batch size."
        )
        for s in segments[1:]
    ]):
        return [tf.identity(s) for s in segments]
