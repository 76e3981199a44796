"""Extracts contextual token features from chosen BERT layers (the paper's feature-based use).

    python examples/extract_features.py --input_file=sentences.txt --output_file=features.jsonl \
        --init_checkpoint=uncased_L-12_H-768_A-12 --layers=-1,-2,-3,-4

Each input line is one text, or a pair written `text_a ||| text_b`, decided line by line as the
original `extract_features.py` does: a line with " ||| " is packed `[CLS] a [SEP] b [SEP]` (the
last " ||| " splits it), any other line `[CLS] text [SEP]`. Blank lines are kept as empty texts,
so `linex_index` is the line number minus one, as in the original. A `.jsonl` output has one
JSON object per line in the original BERT layout:
`{"linex_index": i, "features": [{"token": ..., "layers": [{"index": -1, "values": [...]}, ...]}]}`
(real tokens only). A `.npz` output holds arrays `features` float32 [N, max_seq_length, F]
(the layers combined with --combine), `input_word_ids` and `input_mask`.
"""

from __future__ import annotations

import functools
import json
import re

import common
import numpy as np
import tensorflow as tf
from absl import flags, logging
from tqdm import tqdm

from keras_bert_lite.atomic import atomic_write
from keras_bert_lite.models.feature_extractor import COMBINE_MODES, BertFeatureExtractor

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Text file: one text (or `a ||| b` pair) per line.")
flags.DEFINE_string("output_file", None, "Where to write the features: *.jsonl or *.npz.")
flags.DEFINE_list("layers", ["-1", "-2", "-3", "-4"], "Encoder layers to take (-1 is the last).")
flags.DEFINE_enum("combine", "concat", list(COMBINE_MODES), "How .npz output combines the layers.")
flags.DEFINE_integer("batch_size", 32, "Texts per batch.")
flags.mark_flags_as_required(["input_file", "output_file"])
common.define_model_flags(max_seq_length=128)
flags.adopt_module_key_flags(common)


# The original extract_features.py's rule for a pair line.
_PAIR_LINE = re.compile(r"^(.*) \|\|\| (.*)$")


def read_texts(path: str) -> list[tuple[str, str | None]]:
    """Each line of `path` (stripped) as `(text_a, text_b)`; `text_b` is None for a single text.

    Raises:
        ValueError: the file is not UTF-8 (naming the line) or has no text at all.
    """
    with tf.io.gfile.GFile(path, "rb") as f:
        raw_lines = f.read().splitlines()
    texts = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}, line {number}: not valid UTF-8 ({e.reason} at byte {e.start}).") from None
        pair = _PAIR_LINE.match(line)
        texts.append(pair.groups() if pair else (line, None))
    if not any(a or b for a, b in texts):
        raise ValueError(f"{path}: no text lines.")
    return texts


def pack_texts(preprocessor, texts: list[tuple[str, str | None]]) -> dict[str, np.ndarray]:
    """Model inputs for a batch of lines, each packed on its own as a single text or a pair.

    Returns:
        `input_word_ids`, `input_mask`, `input_type_ids`: int32 [len(texts), seq_length], in
        the order of `texts`.
    """
    groups = [[i for i, (_, b) in enumerate(texts) if b is None], [i for i, (_, b) in enumerate(texts) if b is not None]]
    packed: dict[str, np.ndarray] = {}
    for rows in groups:
        if not rows:
            continue
        text_a = tf.constant([texts[i][0] for i in rows])
        inputs = preprocessor(text_a if texts[rows[0]][1] is None else (text_a, tf.constant([texts[i][1] for i in rows])))
        for name, values in inputs.items():
            values = values.numpy()
            packed.setdefault(name, np.zeros((len(texts), values.shape[1]), values.dtype))[rows] = values
    return packed


def main(argv):
    del argv
    if not FLAGS.output_file.endswith((".jsonl", ".npz")):
        raise ValueError(f"--output_file {FLAGS.output_file} must end in .jsonl or .npz.")
    as_json = FLAGS.output_file.endswith(".jsonl")
    texts = read_texts(FLAGS.input_file)
    encoder, preprocessor = common.load_encoder()
    layers = [int(i) for i in FLAGS.layers]
    extractor = BertFeatureExtractor(encoder, layers, combine="concat" if as_json else FLAGS.combine)
    batches = (
        pack_texts(preprocessor, texts[start : start + FLAGS.batch_size])
        for start in range(0, len(texts), FLAGS.batch_size)
    )
    hidden = encoder.config.hidden_size
    arrays = {"features": [], "input_word_ids": [], "input_mask": []}
    # Written under a temporary name and published when complete: a killed run leaves no half file.
    with atomic_write(FLAGS.output_file) as (temporary,), open(temporary, "wb") as out:
        index = 0
        for inputs in tqdm(batches, total=-(-len(texts) // FLAGS.batch_size), desc="batches"):
            features = np.asarray(extractor(inputs, training=False))
            ids, mask = inputs["input_word_ids"], inputs["input_mask"]
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
                out.write((json.dumps({"linex_index": index, "features": tokens}) + "\n").encode("utf-8"))
                index += 1
        if not as_json:
            np.savez(out, **{name: np.concatenate(parts) for name, parts in arrays.items()})
    logging.info("Wrote features of %d texts to %s", len(texts), FLAGS.output_file)


run = functools.partial(common.run, main)

if __name__ == "__main__":
    run()
