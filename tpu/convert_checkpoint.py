"""Converts BERT weights between Google TF1 checkpoints, Hugging Face folders, KerasHub presets and
`.keras` files.

Inputs (detected from the path, or --input_format):
  google: a release folder (`bert_config.json`, `bert_model.ckpt.*`, `vocab.txt`) or a checkpoint
          prefix (with --bert_config_file when no `bert_config.json` sits next to it);
  hf:     a Hugging Face folder (`config.json`, `model.safetensors` or `pytorch_model.bin`);
  keras_hub: a KerasHub BERT preset (`config.json` naming BertBackbone, `model.weights.h5`);
  keras:  a `.keras` file holding a BertEncoder or BertPretrainer.
Outputs (--output_format, or `keras` for a path ending in `.keras`), complete folders:
  google: `bert_model.ckpt.*`, `bert_config.json`, `vocab.txt` (read by the original BERT code);
  hf:     `model.safetensors`, `config.json`, `vocab.txt`, `tokenizer_config.json` (read by
          transformers' `from_pretrained`, model and tokenizer);
  keras_hub: `model.weights.h5`, `config.json`, `tokenizer.json`, `preprocessor.json`,
          `assets/tokenizer/vocabulary.txt` (read by KerasHub's `from_preset`; the encoder only);
  keras:  a `.keras` file (the model only).
The vocabulary comes from the input folder or --vocab_file; its casing from the input
(`tokenizer_config.json`, KerasHub's `tokenizer.json`, a Google folder's name, else the
vocabulary) or --do_lower_case.
Everything is checked before the weights are read, and every file is written atomically: bad
input is one line `convert_checkpoint.py: error: ...` (exit code 1) and writes nothing.

Usage:

    python tpu/convert_checkpoint.py --input=uncased_L-12_H-768_A-12 --output=bert_hf --output_format=hf
    python tpu/convert_checkpoint.py --input=all-MiniLM-L6-v2 --output=minilm_google --output_format=google \\
        --approximate_gelu
    python tpu/convert_checkpoint.py --input=bert_google --output=bert.keras --model=pretrainer
    python tpu/convert_checkpoint.py --input=bert_google --output=bert_preset --output_format=keras_hub
"""

from __future__ import annotations

import script_runner  # first: it sets what TensorFlow reads when it loads  # isort: skip

import dataclasses
import os

import keras
import tensorflow as tf
from absl import flags, logging
from tqdm import tqdm

from keras_bert_lite.atomic import atomic_write
from keras_bert_lite.config import BertConfig
from keras_bert_lite.interop import (
    CheckpointMismatchError,
    load_google_checkpoint,
    load_hf_checkpoint,
    load_keras_hub_preset,
    read_hf_config,
    read_hf_lower_case,
    read_keras_hub_config,
    read_keras_hub_tokenizer,
    resolve_checkpoint_prefix,
    save_google_checkpoint,
    save_hf_checkpoint,
    save_keras_hub_preset,
)
from keras_bert_lite.interop.keras_hub import VOCABULARY_PATH, WEIGHTS_NAME
from keras_bert_lite.interop.mapping import GOOGLE_HEAD_PREFIXES, HF_HEAD_PREFIXES
from keras_bert_lite.interop.release import (
    VOCAB_NAME,
    FolderVocabulary,
    lower_case_for_folder,
    model_config,
    resolve_vocabulary,
)
from keras_bert_lite.models import BertEncoder, BertPretrainer
from keras_bert_lite.models.checkpoint_folder import model_builder
from keras_bert_lite.text import load_vocabulary

FLAGS = flags.FLAGS

flags.DEFINE_string("input", None, "Google release folder or checkpoint prefix, Hugging Face folder, KerasHub preset, or .keras file.")
flags.DEFINE_enum("input_format", "auto", ["auto", "google", "hf", "keras_hub", "keras"], "Format of --input.")
flags.DEFINE_string("bert_config_file", None, "bert_config.json for a Google checkpoint prefix (default: next to it).")
flags.DEFINE_string("output", None, "Output folder (google, hf, keras_hub) or .keras file.")
flags.DEFINE_enum(
    "output_format", None, ["google", "hf", "keras_hub", "keras"], "Output format (default: keras for *.keras)."
)
flags.DEFINE_enum(
    "model", None, ["encoder", "pretrainer"],
    "Model to convert: the encoder alone or with the MLM/NSP heads (default: encoder; a .keras input "
    "keeps what it holds).",
)
flags.DEFINE_bool(
    "strict", True, "Fail unless every weight is loaded (an encoder may skip the pre-training heads)."
)
flags.DEFINE_string("vocab_file", None, "vocab.txt for the output folder (default: the input folder's).")
flags.DEFINE_bool(
    "do_lower_case", None,
    "Whether the vocabulary is uncased, for the output's tokenizer (default: the input's, from its "
    "tokenizer_config.json or Google folder name; else inferred from the vocabulary's tokens).",
)
flags.mark_flags_as_required(["input", "output"])
flags.DEFINE_bool(
    "approximate_gelu", False,
    "For --output_format=google or keras_hub: write a model with the exact (erf) GELU, as Hugging Face "
    "models have, with the tanh GELU of the original code and of KerasHub's BertBackbone instead. Outputs change slightly (docs/interop.md); without "
    "this flag such a model is refused.",
)


@dataclasses.dataclass
class Source:
    """What --input holds, known before its weights are read.

    Attributes:
        format: google, hf, keras_hub or keras.
        path: the checkpoint prefix (google), folder (hf, keras_hub) or file (keras).
        config: the model's config.
        vocab_file: the input's `vocab.txt`, if it has one.
        lower_case: the input's casing, if it says (a Hugging Face tokenizer config, a Google
            folder's name or vocabulary).
        model: the loaded model, for a .keras input (its config comes from it).
    """

    format: str
    path: str
    config: BertConfig
    vocab_file: str | None = None
    lower_case: bool | None = None
    model: keras.Model | None = None


def detect_input_format(path: str) -> str:
    """google, hf, keras_hub or keras from the files at `path`."""

    if path.endswith(".keras"):
        return "keras"
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "config.json")) and os.path.isfile(os.path.join(path, WEIGHTS_NAME)):
            return "keras_hub"
        if os.path.isfile(os.path.join(path, "config.json")):
            return "hf"
        if os.path.isfile(os.path.join(path, "bert_config.json")):
            return "google"
    elif tf.io.gfile.exists(path + ".index") or path.endswith(".index"):
        return "google"
    raise FileNotFoundError(
        f"--input {path}: not a .keras file, a Hugging Face folder (config.json), a KerasHub preset (config.json "
        f"and {WEIGHTS_NAME}), a Google release folder "
        "(bert_config.json) or a checkpoint prefix (.index file)."
    )


def _existing(path: str) -> str | None:
    return path if os.path.isfile(path) else None


def _keras_model(path: str) -> keras.Model:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"--input {path}: file not found.")
    try:
        model = keras.saving.load_model(path)
    except Exception as e:  # Keras raises assorted types for files that are not its models
        raise ValueError(f"--input {path}: cannot load it as a Keras model: {e}") from None
    if not isinstance(model, (BertEncoder, BertPretrainer)):
        raise ValueError(f"--input {path} holds a {type(model).__name__}, not a BertEncoder or BertPretrainer.")
    if FLAGS.model == "encoder" and isinstance(model, BertPretrainer):
        model = model.encoder
    elif FLAGS.model == "pretrainer" and isinstance(model, BertEncoder):
        raise ValueError(f"--input {path} holds an encoder without pre-training heads; use --model=encoder.")
    return model


def read_source(path: str, fmt: str) -> Source:
    """The config, vocabulary and casing of --input; for a .keras file, its model."""
    if fmt == "keras":
        model = _keras_model(path)
        return Source("keras", path, model_config(model), model=model)
    if fmt == "hf":
        vocab_file = _existing(os.path.join(path, VOCAB_NAME))
        return Source("hf", path, read_hf_config(path), vocab_file, read_hf_lower_case(path) if vocab_file else None)
    if fmt == "keras_hub":
        vocab_file = _existing(os.path.join(path, VOCABULARY_PATH))
        lower_case = read_keras_hub_tokenizer(path).lower_case if vocab_file else None
        return Source("keras_hub", path, read_keras_hub_config(path), vocab_file, lower_case)
    prefix = resolve_checkpoint_prefix(path)
    folder = os.path.dirname(prefix)
    config = BertConfig.from_json_file(FLAGS.bert_config_file or os.path.join(folder, "bert_config.json"))
    vocab_file = _existing(os.path.join(folder, VOCAB_NAME))
    lower_case = lower_case_for_folder(folder, load_vocabulary(vocab_file)) if vocab_file else None
    return Source("google", prefix, config, vocab_file, lower_case)


def check_output(source: Source, path: str, fmt: str) -> FolderVocabulary | None:
    """Everything about the output that can fail, checked before the weights are read.

    Returns:
        The vocabulary to write (None for a .keras output).
    """
    if fmt == "keras":
        if not path.endswith(".keras"):
            raise ValueError(f"--output {path}: a .keras output must end with '.keras'.")
        if os.path.isdir(path):
            raise ValueError(f"--output {path} is a folder; expected a .keras file path.")
        return None
    if os.path.isfile(path):
        raise ValueError(f"--output {path} is a file; the {fmt} output is a folder.")
    if fmt in ("google", "keras_hub"):
        if source.config.hidden_act == "gelu_exact" and not FLAGS.approximate_gelu:
            owner = "Google's original code" if fmt == "google" else "KerasHub's BertBackbone"
            raise ValueError(
                f"--input {source.path} uses the exact (erf) GELU, which {owner} does not have: pass "
                "--approximate_gelu to write its tanh GELU instead (outputs change slightly; see docs/interop.md), or "
                "convert with --output_format=hf."
            )
    if fmt == "google":
        source.config.to_google_dict(approximate_gelu=FLAGS.approximate_gelu)
    if fmt == "keras_hub" and source.config.layer_norm_eps != 1e-12:
        raise ValueError(f"--input {source.path} has layer_norm_eps {source.config.layer_norm_eps}; KerasHub's "
                         "BertBackbone has 1e-12.")
    vocab_file = FLAGS.vocab_file or source.vocab_file
    if vocab_file is None:
        raise ValueError(
            f"--input {source.path} has no {VOCAB_NAME}: pass --vocab_file so that the {fmt} output folder is complete."
        )
    lower_case = FLAGS.do_lower_case if FLAGS.do_lower_case is not None else source.lower_case
    if FLAGS.vocab_file and FLAGS.do_lower_case is None:
        lower_case = None  # another vocabulary than the input's: its own tokens tell
    return resolve_vocabulary(vocab_file, source.config, lower_case)


def _load(model: keras.Model, loader, path: str, head_prefixes: tuple[str, ...]) -> None:
    report = loader(model, path, strict=False)
    if FLAGS.strict:
        report.raise_for_problems(allowed_unexpected=head_prefixes if isinstance(model, BertEncoder) else ())
    logging.info("%s", report)


def read_model(source: Source) -> keras.Model:
    """The model held by `source`, with its weights."""
    if source.model is not None:
        return source.model
    model = model_builder(FLAGS.model or "encoder")(source.config)
    if source.format == "hf":
        _load(model, load_hf_checkpoint, source.path, HF_HEAD_PREFIXES)
    elif source.format == "keras_hub":
        _load(model, load_keras_hub_preset, source.path, ())
    else:
        _load(model, load_google_checkpoint, source.path, GOOGLE_HEAD_PREFIXES)
    return model


def write_model(model: keras.Model, vocab: FolderVocabulary | None, path: str, fmt: str) -> list[str]:
    """Writes `model` (and `vocab`) to `path` in format `fmt`; returns the files written."""
    if fmt == "keras":
        # Keras names its format by the suffix, so the temporary name keeps it.
        with atomic_write(path[: -len(".keras")], suffixes=(".keras",)) as (temporary,):
            model.save(temporary + ".keras")
        return [path]
    vocabulary = list(vocab.tokens)
    if fmt == "google":
        save_google_checkpoint(model, os.path.join(path, "bert_model.ckpt"), vocabulary,
                               lower_case=vocab.lower_case, approximate_gelu=FLAGS.approximate_gelu)
        names = ["bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001", "bert_config.json", VOCAB_NAME]
    elif fmt == "keras_hub":
        save_keras_hub_preset(model, path, vocabulary, lower_case=vocab.lower_case,
                              approximate_gelu=FLAGS.approximate_gelu)
        names = [WEIGHTS_NAME, "config.json", "tokenizer.json", "preprocessor.json", VOCABULARY_PATH]
    else:
        save_hf_checkpoint(model, path, vocabulary, lower_case=vocab.lower_case)
        names = ["model.safetensors", "config.json", VOCAB_NAME, "tokenizer_config.json"]
    return [os.path.join(path, name) for name in names]


def convert() -> None:
    output_format = FLAGS.output_format or ("keras" if FLAGS.output.endswith(".keras") else None)
    if output_format is None:
        raise ValueError(f"--output {FLAGS.output}: give --output_format (google, hf, keras_hub or keras).")
    input_format = FLAGS.input_format
    if input_format == "auto":
        input_format = detect_input_format(FLAGS.input)
    source = read_source(FLAGS.input, input_format)
    vocab = check_output(source, FLAGS.output, output_format)
    logging.info("Converting %s (%s) to %s (%s).", FLAGS.input, input_format, FLAGS.output, output_format)
    with tqdm(total=2, desc="convert", unit="step") as progress:
        progress.set_postfix_str("reading weights")
        model = read_model(source)
        progress.update()
        progress.set_postfix_str(f"writing {output_format}")
        written = write_model(model, vocab, FLAGS.output, output_format)
        progress.update()
    casing = "" if vocab is None else f", {'uncased' if vocab.lower_case else 'cased'} vocabulary of {len(vocab.tokens)}"
    logging.info(
        "Converted %s (%s with %d weights%s). Wrote:\n  %s",
        FLAGS.input, type(model).__name__, len(model.weights), casing,
        "\n  ".join(f"{name} ({tf.io.gfile.stat(name).length:,} bytes)" for name in written),
    )


def describe_error(error: BaseException) -> str:
    """One line for an error; a checkpoint that does not fit names its problems."""
    if isinstance(error, CheckpointMismatchError):
        return (f"{error.report.source} does not match the model: {'; '.join(error.problems)}. "
                "Pass --nostrict to convert what fits.")
    return script_runner.first_line(error)


def main(argv: list[str]) -> None:
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments: {' '.join(argv[1:])} (flags are --name=value).")
    convert()


def run(argv: list[str] | None = None) -> None:
    """Parses the flags of `argv` (default: `sys.argv`) and runs `main`; bad input ends the process
    with one line `convert_checkpoint.py: error: ...` and exit code 1 (`script_runner.run`)."""
    script_runner.run(main, argv, describe_error)


if __name__ == "__main__":
    run()
