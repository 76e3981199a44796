"""Converts BERT weights between Google TF1 checkpoints, Hugging Face folders and `.keras` files.

Inputs (detected from the path, or --input_format):
  google: a release folder (`bert_config.json`, `bert_model.ckpt.*`, `vocab.txt`) or a checkpoint
          prefix (with --bert_config_file when no `bert_config.json` sits next to it);
  hf:     a Hugging Face folder (`config.json`, `model.safetensors` or `pytorch_model.bin`);
  keras:  a `.keras` file holding a BertEncoder or BertPretrainer.
Outputs (--output_format, or `keras` for a path ending in `.keras`):
  google: a release folder (`bert_config.json`, `bert_model.ckpt.*`, `vocab.txt` if known);
  hf:     a Hugging Face folder (`config.json`, `model.safetensors`, `vocab.txt` if known);
  keras:  a `.keras` file.

Usage:

    python tpu/convert_checkpoint.py --input=uncased_L-12_H-768_A-12 --output=bert_hf --output_format=hf
    python tpu/convert_checkpoint.py --input=bert_hf --output=bert_google --output_format=google \\
        --model=pretrainer
    python tpu/convert_checkpoint.py --input=bert_google --output=bert.keras
"""

from __future__ import annotations

import os
import shutil
import sys

import keras
import tensorflow as tf
from absl import app, flags, logging
from tqdm import tqdm

from keras_bert_lite.checkpoints import (
    CheckpointMismatchError,
    load_google_checkpoint,
    load_hf_checkpoint,
    read_hf_config,
    resolve_checkpoint_prefix,
    save_google_checkpoint,
    save_hf_checkpoint,
)
from keras_bert_lite.checkpoints.mapping import GOOGLE_HEAD_PREFIXES, HF_HEAD_PREFIXES
from keras_bert_lite.checkpoints.release import build_model
from keras_bert_lite.config import BertConfig
from keras_bert_lite.models import BertEncoder, BertPretrainer

FLAGS = flags.FLAGS

flags.DEFINE_string("input", None, "Google release folder or checkpoint prefix, Hugging Face folder, or .keras file.")
flags.DEFINE_enum("input_format", "auto", ["auto", "google", "hf", "keras"], "Format of --input.")
flags.DEFINE_string("bert_config_file", None, "bert_config.json for a Google checkpoint prefix (default: next to it).")
flags.DEFINE_string("output", None, "Output folder (google, hf) or .keras file.")
flags.DEFINE_enum("output_format", None, ["google", "hf", "keras"], "Output format (default: keras for *.keras).")
flags.DEFINE_enum(
    "model", None, ["encoder", "pretrainer"],
    "Model to convert: the encoder alone or with the MLM/NSP heads (default: encoder; a .keras input "
    "keeps what it holds).",
)
flags.DEFINE_bool(
    "strict", True, "Fail unless every weight is loaded (an encoder may skip the pre-training heads)."
)

# Activations the original BERT code understands; others are ours only.
_GOOGLE_ACTIVATIONS = ("gelu", "relu", "tanh")


def detect_input_format(path: str) -> str:
    """google, hf or keras from the files at `path`."""
    if path.endswith(".keras"):
        return "keras"
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "config.json")):
            return "hf"
        if os.path.isfile(os.path.join(path, "bert_config.json")):
            return "google"
    elif tf.io.gfile.exists(path + ".index") or path.endswith(".index"):
        return "google"
    raise FileNotFoundError(
        f"--input {path}: not a .keras file, a Hugging Face folder (config.json), a Google release folder "
        "(bert_config.json) or a checkpoint prefix (.index file)."
    )


def _load(model: keras.Model, loader, path: str, head_prefixes: tuple[str, ...]) -> None:
    report = loader(model, path, strict=False)
    if FLAGS.strict:
        report.raise_for_problems(allowed_unexpected=head_prefixes if isinstance(model, BertEncoder) else ())
    logging.info("%s", report)


def read_model(path: str, fmt: str) -> tuple[keras.Model, str | None]:
    """The model held at `path` in format `fmt`, and the path of its vocab.txt if there is one."""
    if fmt == "keras":
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--input {path}: file not found.")
        model = keras.saving.load_model(path)
        if not isinstance(model, (BertEncoder, BertPretrainer)):
            raise ValueError(f"--input {path} holds a {type(model).__name__}, not a BertEncoder or BertPretrainer.")
        if FLAGS.model == "encoder" and isinstance(model, BertPretrainer):
            model = model.encoder
        elif FLAGS.model == "pretrainer" and isinstance(model, BertEncoder):
            raise ValueError(f"--input {path} holds an encoder without pre-training heads; use --model=encoder.")
        return model, None
    kind = FLAGS.model or "encoder"
    if fmt == "hf":
        model = build_model(read_hf_config(path), kind)
        _load(model, load_hf_checkpoint, path, HF_HEAD_PREFIXES)
        folder = path
    else:
        prefix = resolve_checkpoint_prefix(path)
        folder = os.path.dirname(prefix)
        config = BertConfig.from_json_file(FLAGS.bert_config_file or os.path.join(folder, "bert_config.json"))
        model = build_model(config, kind)
        _load(model, load_google_checkpoint, prefix, GOOGLE_HEAD_PREFIXES)
    vocab = os.path.join(folder, "vocab.txt")
    return model, vocab if os.path.isfile(vocab) else None


def write_model(model: keras.Model, vocab: str | None, path: str, fmt: str) -> None:
    """Writes `model` (and a copy of `vocab`) to `path` in format `fmt`."""
    if fmt == "keras":
        if not path.endswith(".keras"):
            raise ValueError(f"--output {path}: a .keras output must end with '.keras'.")
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        model.save(path)
        return
    config = model.encoder.config if isinstance(model, BertPretrainer) else model.config
    if fmt == "google":
        if config.hidden_act not in _GOOGLE_ACTIVATIONS:
            logging.warning(
                "hidden_act %r is not understood by Google's original modeling.py (it knows %s).",
                config.hidden_act, _GOOGLE_ACTIVATIONS,
            )
        save_google_checkpoint(model, os.path.join(path, "bert_model.ckpt"))
        config.to_json_file(os.path.join(path, "bert_config.json"))
    else:
        save_hf_checkpoint(model, path)
    if vocab:
        shutil.copyfile(vocab, os.path.join(path, "vocab.txt"))


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    output_format = FLAGS.output_format or ("keras" if FLAGS.output.endswith(".keras") else None)
    try:
        if output_format is None:
            raise ValueError(f"--output {FLAGS.output}: give --output_format (google, hf or keras).")
        input_format = FLAGS.input_format
        with tqdm(total=2, desc="convert", unit="step") as progress:
            if input_format == "auto":
                input_format = detect_input_format(FLAGS.input)
            progress.set_postfix_str(f"reading {input_format}")
            model, vocab = read_model(FLAGS.input, input_format)
            progress.update()
            progress.set_postfix_str(f"writing {output_format}")
            write_model(model, vocab, FLAGS.output, output_format)
            progress.update()
    except CheckpointMismatchError as e:
        sys.exit(f"convert_checkpoint: error: {e}\n(With this script: --nostrict.)")
    except (ValueError, FileNotFoundError, TypeError) as e:
        sys.exit(f"convert_checkpoint: error: {e}")
    logging.info(
        "Converted %s (%s, %s, %d weights) to %s (%s).",
        FLAGS.input, input_format, type(model).__name__, len(model.weights), FLAGS.output, output_format,
    )


if __name__ == "__main__":
    flags.mark_flags_as_required(["input", "output"])
    app.run(main)
