"""`BertFeatureExtractor`: per-token features from chosen encoder layers (feature-based BERT)."""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import ops

from keras_bert_lite.models.encoder import BertEncoder, encoder_inputs
from keras_bert_lite.models.task_model import TextTaskModel
from keras_bert_lite.text.preprocessor import BertPreprocessor

COMBINE_MODES = ("concat", "sum", "mean")


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertFeatureExtractor(TextTaskModel):
    """Contextual token features from a few encoder layers, combined per position.

    The paper's feature-based NER experiment found the concatenation of the last four layers
    best; `layer_indices=(-1, -2, -3, -4), combine="concat"` (the default) reproduces it.

    Args:
        encoder: the pre-trained `BertEncoder`.
        layer_indices: indices into the encoder's L transformer layers (negative counts from the
            last, so -1 is `sequence_output`), in output order.
        combine: "concat" (features [batch, seq, len(layer_indices) * H]), "sum" or "mean"
            ([batch, seq, H]).
        preprocessor: optional `BertPreprocessor`, so that `predict` takes texts (see `TextTaskModel`).

    Inputs (a dict, each int32 [batch, seq]): `input_word_ids`, `input_mask`, `input_type_ids`;
    `predict` also takes texts or text pairs when the model has a preprocessor.

    Output:
        float features [batch, seq, F] as described above.

    Example:

        >>> extractor = BertFeatureExtractor(BertEncoder(BertConfig.preset("tiny")),
        ...                                  layer_indices=(-1, -2))
        >>> extractor(features).shape  # features from a BertPreprocessor
        TensorShape([batch, seq, 256])
        >>> extractor = BertFeatureExtractor.from_checkpoint("all-MiniLM-L6-v2", seq_length=32)
        >>> extractor.predict(["the cat sat on the mat"]).shape
        (1, 32, 1536)
    """

    CONFIG_ARGS = ("layer_indices", "combine")

    def __init__(
        self,
        encoder: BertEncoder,
        layer_indices: Sequence[int] = (-1, -2, -3, -4),
        combine: str = "concat",
        preprocessor: BertPreprocessor | None = None,
        **kwargs,
    ):
        num_layers = encoder.config.num_hidden_layers
        layer_indices = [int(i) for i in layer_indices]
        if not layer_indices:
            raise ValueError("BertFeatureExtractor: layer_indices must name at least one layer.")
        bad = [i for i in layer_indices if not -num_layers <= i < num_layers]
        if bad:
            raise ValueError(
                f"BertFeatureExtractor: layer indices {bad} are outside the encoder's {num_layers} "
                f"layers (valid: {-num_layers}..{num_layers - 1})."
            )
        if combine not in COMBINE_MODES:
            raise ValueError(f"BertFeatureExtractor: combine must be one of {COMBINE_MODES}, got {combine!r}.")
        inputs = encoder_inputs()
        # One call; in a tf.function Grappler folds these slices of the stack into the layers' tensors.
        encoder_outputs = encoder(inputs)["encoder_outputs"]
        layers = [encoder_outputs[i] for i in layer_indices]
        if combine == "concat":
            features = ops.concatenate(layers, axis=-1)
        else:
            features = sum(layers[1:], start=layers[0])
            if combine == "mean":
                features = features / len(layers)
        kwargs.setdefault("name", "bert_feature_extractor")
        super().__init__(inputs=inputs, outputs=features, **kwargs)
        self.attach(encoder, preprocessor)
        self.layer_indices = tuple(layer_indices)
        self.combine = combine
