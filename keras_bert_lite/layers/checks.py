"""Input checks of the layers: one error naming the input, raised before the input is used.

Out-of-range indices would otherwise surface as a TensorFlow `GatherV2` error, or not at all (a
negative id selects a row from the end of a table), and shape mismatches as an `AddV2` error deep
in a layer. Each check raises `ValueError` while tracing when the shapes are known, and otherwise
an `InvalidArgumentError` with the same message at run time: the returned tensors depend on the
checks, so in a graph nothing downstream runs before them. (XLA compiles run-time assertions
away, as it does all of TensorFlow's.)
"""

from __future__ import annotations

import tensorflow as tf


def after(checks: list, tensor):
    """`tensor` (dense or ragged), made to run after `checks` in a graph (in eager mode they have run)."""
    checks = [check for check in checks if check is not None]
    if not checks:
        return tensor
    with tf.control_dependencies(checks):
        return tf.identity(tensor)


def indices_in_range(indices, upper, message: str):
    """`indices` as int32, checked to be in [0, upper); `message` names them and the range."""
    indices = tf.cast(indices, tf.int32)
    checks = [
        tf.debugging.assert_non_negative(indices, message=message),
        tf.debugging.assert_less(indices, tf.cast(upper, tf.int32), message=message),
    ]
    return after(checks, indices)


def same_shape(tensor, reference_shape, message: str):
    """`tensor`, checked to have the shape `reference_shape` (a `tf.TensorShape` for the static
    check and the tensor of its run-time dimensions), e.g. a mask against its ids' [batch, seq]."""
    tensor = tf.convert_to_tensor(tensor)
    static, dynamic = reference_shape
    if not tensor.shape.is_compatible_with(static):
        raise ValueError(f"{message}; got shape {tensor.shape} for {static}.")
    return after([tf.debugging.assert_equal(tf.shape(tensor), dynamic, message=message)], tensor)


def length_in_range(tensor, limit: int, message: str):
    """`tensor` [batch, seq, ...], checked to have 1 <= seq <= limit; `message` names it and the range."""
    seq = tensor.shape[1]
    if seq is not None:
        if not 1 <= seq <= limit:
            raise ValueError(f"{message}; got {seq}.")
        return tensor
    seq = tf.shape(tensor)[1]
    checks = [
        tf.debugging.assert_positive(seq, message=message),
        tf.debugging.assert_less_equal(seq, limit, message=message),
    ]
    return after(checks, tensor)
