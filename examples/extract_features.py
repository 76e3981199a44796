"""Extracts contextual token features from chosen BERT layers (the paper's feature-based use).

    python examples/extract_features.py --input_file=sentences.txt --output_file=features.jsonl \
        --init_checkpoint=uncased_L-12_H-768_A-12 --layers=-1,-2,-3,-4

Each input line is one text, or a pair written `text_a ||| text_b`. A `.jsonl` output has one
JSON object per line in the original BERT layout:
`{"linex_index": i, "features": [{"token": ..., "layers": [{"index": -1, "values": [...]}, ...]}]}`
(real tokens only). A `.npz` output holds arrays `features` float32 [N, max_seq_length, F]
(the layers combined with --combine), `input_word_ids` and `input_mask`.
"""

from __future__ import annotations

import json

import common
import numpy as np
import tensorflow as tf
from absl import flags, logging
from tqdm import tqdm

from keras_bert_lite.models.feature_extractor import COMBINE_MODES, BertFeatureExtractor

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Text file: one text (or `a ||| b` pair) per line.")
flags.DEFINE_string("output_file", None, "Where to write the features: *.jsonl or *.npz.")
flags.DEFINE_list("layers", ["-1", "-2", "-3", "-4"], "Encoder layers to take (-1 is the last).")
flags.DEFINE_enum("combine", "concat", list(COMBINE_MODES), "How .npz output combines the layers.")
flags.DEFINE_integer("batch_size", 32, "Texts per batch.")
flags.mark_flags_as_required(["input_file", "output_file"])
common.define_model_flags(max_seq_length=128)


def read_texts(path: str) -> tuple[list[str], list[str] | None]:
    """Lines as single texts, or as pairs when any line contains `|||`."""
    with tf.io.gfile.GFile(path, "rb") as f:
        try:
            lines = [line.strip() for line in f.read().decode("utf-8").splitlines()]
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not valid UTF-8 ({e.reason} at byte {e.start}).") from None
    lines = [line for line in lines if line]
    if not lines:
        raise ValueError(f"{path}: no text lines.")
    if not any("|||" in line for line in lines):
        return lines, None
    pairs = [line.split("|||", 1) if "|||" in line else [line, ""] for line in lines]
    return [a.strip() for a, _ in pairs], [b.strip() for _, b in pairs]


def main(argv):
    del argv
    if not FLAGS.output_file.endswith((".jsonl", ".npz")):
        raise ValueError(f"--output_file {FLAGS.output_file} must end in .jsonl or .npz.")
    as_json = FLAGS.output_file.endswith(".jsonl")
    text_a, text_b = read_texts(FLAGS.input_file)
    encoder, preprocessor = common.load_encoder()
    layers = [int(i) for i in FLAGS.layers]
    extractor = BertFeatureExtractor(encoder, layers, combine="concat" if as_json else FLAGS.combine)
    texts = (text_a,) if text_b is None else (text_a, text_b)
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(FLAGS.batch_size)
    dataset = dataset.map(lambda *t: preprocessor(t[0] if len(t) == 1 else t))
    hidden = encoder.config.hidden_size
    arrays = {"features": [], "input_word_ids": [], "input_mask": []}
    with open(FLAGS.output_file, "w", encoding="utf-8") if as_json else _NoFile() as out:
        index = 0
        for inputs in tqdm(dataset, total=-(-len(text_a) // FLAGS.batch_size), desc="batches"):
            features = np.asarray(extractor(inputs, training=False))
            ids, mask = inputs["input_word_ids"].numpy(), inputs["input_mask"].numpy()
            if not as_json:
                for name, value in (("features", features), ("input_word_ids", ids), ("input_mask", mask)):
                    arrays[name].append(value)
                continue
            for row in range(len(ids)):
                tokens = []
                for position in np.flatnonzero(mask[row]):
                    values = features[row, position]
                    tokens.append({
                        "token": preprocessor.tokenizer.id_to_token(ids[row, position]),
                        "layers": [
                            {"index": layer, "values": [round(float(v), 6) for v in values[k * hidden:(k + 1) * hidden]]}
                            for k, layer in enumerate(layers)
                        ],
                    })
                out.write(json.dumps({"linex_index": index, "features": tokens}) + "\n")
                index += 1
    if not as_json:
        np.savez(FLAGS.output_file, **{name: np.concatenate(parts) for name, parts in arrays.items()})
    logging.info("Wrote features of %d texts to %s", len(text_a), FLAGS.output_file)


class _NoFile:
    """Stands in for the output file when arrays are written at the end."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    common.run(main)
