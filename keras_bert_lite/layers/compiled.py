"""Kept for `from keras_bert_lite.layers.compiled import sparse_softmax_cross_entropy`; the kernel
lives in `keras_bert_lite.layers.accelerated`, with the other accelerated kernels."""

from keras_bert_lite.layers.accelerated import sparse_softmax_cross_entropy

__all__ = ["sparse_softmax_cross_entropy"]
