"""Pre-trained BERT from whatever folder a user has (ours, a Google release or Hugging Face) or a
Hugging Face Hub name.

`find_checkpoint` says what a path holds (its kind, weights, vocabulary and casing) without
loading anything; `from_checkpoint` loads the encoder and a matching preprocessor;
`from_google_checkpoint` and `from_hf_checkpoint` load a release folder as a `BertEncoder` or,
with the checkpoint's pre-training heads (to continue pre-training), a `BertPretrainer`. Kinds:

- "keras" (ours): a folder with `encoder.keras` and `vocab.txt` (what `tpu/pretrain.py`,
  `tpu/main_job.py` and `export_pretrained` write), or a `.keras` file of a `BertEncoder` or of a model holding one as
  `.encoder` (`pretrainer.keras`, a fine-tuned classifier), with `vocab.txt` beside it.
- "google": a Google BERT release folder (`bert_config.json`, `vocab.txt`, `bert_model.ckpt.*`),
  or the checkpoint prefix inside one (`.../bert_model.ckpt`, as the original scripts take it).
- "hugging_face": `config.json`, `model.safetensors` (or `pytorch_model.bin`) and `vocab.txt`;
  or a Hugging Face Hub name (`"hf://org/name"` or `"hf://org/name@revision"`), fetched into its
  cache (see `keras_bert_lite.interop.hub.hub_folder`). Only the `hf://` prefix reaches the
  network: any other name is a path, and a missing one fails at once.
- "keras_hub": a KerasHub BERT preset (`config.json` naming `BertBackbone`, `model.weights.h5`,
  `tokenizer.json` and `assets/tokenizer/vocabulary.txt`), as `save_to_preset` writes it; of a
  task preset (`task.json`, `task.weights.h5`) the backbone is loaded (the log says what is not).

Whether the vocabulary is uncased (lower-case and strip accents before WordPiece) is decided by
the same rule as each kind's own loader, so a folder reads the same whichever way it is loaded:
Hugging Face folders by `tokenizer_config.json`'s `do_lower_case` (`read_hf_lower_case`; True
without one, as in transformers); Google folders by Google's names (`uncased_*`, `cased_*`), else
by the vocabulary (`lower_case_for_folder`); our folders by their `tokenizer_config.json`
(`export_pretrained` writes one), else by the vocabulary (`lower_case_from_vocabulary`: uncased
exactly when no token has an upper-case letter, which WordPiece learned on lower-cased text
cannot produce); KerasHub presets by their `tokenizer.json` (`lowercase`, and `strip_accents`
for the preprocessor).

Example:

    >>> folder = find_checkpoint("uncased_L-12_H-768_A-12")
    >>> folder.kind, folder.lower_case
    ('google', True)
    >>> encoder, preprocessor = from_checkpoint("output/pretrain", seq_length=128)
    >>> outputs = encoder(preprocessor(["the cat sat on the mat"]))
    >>> encoder, preprocessor = from_checkpoint("hf://sentence-transformers/all-MiniLM-L6-v2")
    >>> pretrainer, preprocessor = from_google_checkpoint("uncased_L-12_H-768_A-12", model="pretrainer")
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import keras
import tensorflow as tf
from absl import logging

from keras_bert_lite.config import BertConfig
from keras_bert_lite.interop import (
    load_google_checkpoint,
    load_hf_checkpoint,
    read_hf_config,
    read_hf_lower_case,
    resolve_checkpoint_prefix,
)
from keras_bert_lite.interop.google import CONFIG_NAME as GOOGLE_CONFIG_NAME
from keras_bert_lite.interop.hub import hub_folder
from keras_bert_lite.interop.huggingface import CONFIG_NAME, TOKENIZER_CONFIG_NAME, WEIGHT_NAMES
from keras_bert_lite.interop.keras_hub import (
    VOCABULARY_PATH,
    WEIGHTS_NAME,
    is_keras_hub_preset,
    load_keras_hub_preset,
    read_keras_hub_config,
    read_keras_hub_tokenizer,
)
from keras_bert_lite.interop.mapping import GOOGLE_HEAD_PREFIXES, HF_HEAD_PREFIXES, is_pretrainer
from keras_bert_lite.interop.release import (
    VOCAB_NAME,
    lower_case_for_folder,
    lower_case_from_vocabulary,
    make_preprocessor,
)
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.pretrainer import BertPretrainer
from keras_bert_lite.text.preprocessor import BertPreprocessor
from keras_bert_lite.text.tokenizer import load_vocabulary

KERAS_ENCODER_NAME = "encoder.keras"
MODEL_KINDS = ("encoder", "pretrainer")


@dataclasses.dataclass(frozen=True)
class CheckpointFolder:
    """What a checkpoint path holds (see `find_checkpoint`).

    Attributes:
        kind: "keras", "google", "hugging_face" or "keras_hub".
        directory: the folder holding the files.
        weights: the `.keras` file, the TF checkpoint prefix, the Hugging Face weights file, or
            KerasHub's `model.weights.h5`.
        vocab_file: the WordPiece vocabulary.
        lower_case: whether the vocabulary is uncased.
        lower_case_source: why, for logs ("do_lower_case in .../tokenizer_config.json" or
            "the vocabulary ... is uncased: ...").
    """

    kind: str
    directory: str
    weights: str
    vocab_file: str
    lower_case: bool
    lower_case_source: str


def find_checkpoint(path: str | os.PathLike, vocab_file: str | os.PathLike | None = None) -> CheckpointFolder:
    """Finds out what `path` holds, reading only file names, JSON configs and the vocabulary.

    Args:
        path: a checkpoint folder of any kind, a `.keras` file, or a Google checkpoint prefix
            (local or any `tf.io.gfile` path, e.g. `gs://...`); or a Hugging Face Hub name
            `hf://org/name[@revision]`, whose files are fetched into the cache first.
        vocab_file: the vocabulary, when it is not `vocab.txt` beside the weights.

    Returns:
        A `CheckpointFolder`.

    Raises:
        FileNotFoundError: nothing at `path` (naming it and what was looked for; no Hub
            request is made), or no vocabulary (naming where it was looked for);
            for a Hub name, the model is neither cached nor reachable (naming what was tried).
        ImportError: a Hub name without `huggingface_hub` installed.
        ValueError: `path` is a folder of none of the kinds (naming what it holds), or a Google
            checkpoint prefix in a folder with several checkpoints.
    """
    folder = hub_folder(path)  # only an hf:// name goes to the Hub; anything else is a path
    path = folder or os.fspath(path).rstrip("/") or "/"
    if not (folder or tf.io.gfile.exists(path) or tf.io.gfile.exists(path + ".index")):
        raise FileNotFoundError(
            f"No checkpoint at {path}: no such file or folder (looked for a checkpoint folder, a .keras file "
            f"or a TF checkpoint {path}.index). A Hugging Face Hub model is named with hf://, e.g. "
            "hf://sentence-transformers/all-MiniLM-L6-v2."
        )
    if tf.io.gfile.isdir(path):
        directory = path
        kind, weights = _folder_kind(path)
    elif path.endswith(".keras"):
        directory, kind, weights = os.path.dirname(path), "keras", path
    else:
        weights = resolve_checkpoint_prefix(path)  # FileNotFoundError naming the path
        directory, kind = os.path.dirname(weights), "google"
        if not tf.io.gfile.exists(os.path.join(directory, GOOGLE_CONFIG_NAME)):
            raise FileNotFoundError(
                f"{path} is a TF checkpoint, but {os.path.join(directory, GOOGLE_CONFIG_NAME)} is missing; "
                "a Google BERT checkpoint needs its bert_config.json beside it."
            )
        if len(tf.io.gfile.glob(os.path.join(directory, "*.index"))) > 1:
            raise ValueError(
                f"{directory} holds several checkpoints; move {weights}.* into a folder of its own with "
                "bert_config.json and vocab.txt, and pass that folder."
            )
    if vocab_file is None:
        vocab_file = _vocab_file(kind, directory)
        if not tf.io.gfile.exists(vocab_file):
            raise FileNotFoundError(
                f"{path}: no {_vocab_name(kind)} beside the weights (looked for {vocab_file}); pass the vocabulary "
                "file explicitly (vocab_file=...)."
            )
    vocab_file = os.fspath(vocab_file)
    lower_case, source = _lower_case(kind, directory, vocab_file)
    return CheckpointFolder(kind, directory, weights, vocab_file, lower_case, source)


def from_checkpoint(
    path: str | os.PathLike,
    seq_length: int = 128,
    lower_case: bool | None = None,
    vocab_file: str | os.PathLike | None = None,
) -> tuple[BertEncoder, BertPreprocessor]:
    """Loads the pre-trained `BertEncoder` at `path` and a `BertPreprocessor` for its vocabulary.

    Args:
        path: as for `find_checkpoint`: a folder or file of any kind, or a Hugging Face Hub name.
        seq_length: the preprocessor's packed length (at most the model's
            `max_position_embeddings`).
        lower_case: whether to lower-case and strip accents; None reads it from the folder (see
            the module docstring). A value that contradicts the vocabulary is logged as a warning.
        vocab_file: the vocabulary, when it is not `vocab.txt` beside the weights.

    Returns:
        (encoder, preprocessor). Pre-training heads in the checkpoint are not loaded.

    Raises:
        FileNotFoundError, ValueError: see `find_checkpoint`; also a `.keras` file without a
            `BertEncoder`, a `seq_length` the model cannot take, a vocabulary larger than the
            model's, or weights that do not fit their config (each naming the file).
    """
    folder = find_checkpoint(path, vocab_file)
    lower_case = loading_lower_case(folder, lower_case)
    if folder.kind == "keras":
        model = keras.saving.load_model(folder.weights, compile=False)
        encoder = model if isinstance(model, BertEncoder) else getattr(model, "encoder", None)
        if not isinstance(encoder, BertEncoder):
            raise ValueError(f"{folder.weights} holds a {type(model).__name__}, which has no BertEncoder.")
        return encoder, make_preprocessor(folder.vocab_file, encoder.config, seq_length, lower_case)
    return load_folder(folder.kind, folder.directory, seq_length, lower_case, folder.vocab_file)


def loading_lower_case(folder: CheckpointFolder, lower_case: bool | None) -> bool:
    """`lower_case`, or the folder's when None; logs the load, and warns when a given value
    contradicts the folder's."""
    if lower_case is None:
        lower_case = folder.lower_case
    elif lower_case != folder.lower_case:
        logging.warning(
            "lower_case=%s, but %s (lower_case=%s): text may be tokenized differently from pre-training.",
            lower_case, folder.lower_case_source, folder.lower_case,
        )
    logging.info("Loading the %s checkpoint %s; lower_case=%s (%s).", folder.kind, folder.weights, lower_case,
                 folder.lower_case_source if lower_case == folder.lower_case else "as given")
    return lower_case


def load_folder(
    kind: str,
    directory: str,
    seq_length: int = 128,
    lower_case: bool | None = None,
    vocab_file: str | None = None,
    build: Callable[[BertConfig], keras.Model] = BertEncoder,
) -> tuple[keras.Model, BertPreprocessor]:
    """The model and preprocessor of a Google ("google"), Hugging Face ("hugging_face") or
    KerasHub ("keras_hub") folder, as `from_google_checkpoint` describes them; `build` makes the model from the folder's config
    (a `BertEncoder` or a `BertPretrainer`); `vocab_file` None is the folder's vocabulary."""
    vocab_file = vocab_file or _vocab_file(kind, directory)
    strip_accents = None
    if kind == "keras_hub":
        config, load, heads = read_keras_hub_config(directory), load_keras_hub_preset, ()
        strip_accents = read_keras_hub_tokenizer(directory).strip_accents
    elif kind == "google":
        config = BertConfig.from_json_file(os.path.join(directory, GOOGLE_CONFIG_NAME))
        load, heads = load_google_checkpoint, GOOGLE_HEAD_PREFIXES
    else:
        config, load, heads = read_hf_config(directory), load_hf_checkpoint, HF_HEAD_PREFIXES
    if lower_case is None:
        lower_case = _lower_case(kind, directory, vocab_file)[0]
    preprocessor = make_preprocessor(vocab_file, config, seq_length, lower_case, strip_accents)
    target = build(config)
    report = load(target, directory, strict=False)
    report.raise_for_problems(allowed_unexpected=() if is_pretrainer(target) else heads)
    return target, preprocessor


def _folder_kind(directory: str) -> tuple[str, str]:
    """(kind, weights) of a checkpoint folder."""
    names = {name.rstrip("/") for name in tf.io.gfile.listdir(directory)}
    if KERAS_ENCODER_NAME in names:
        return "keras", os.path.join(directory, KERAS_ENCODER_NAME)
    if is_keras_hub_preset(names):
        read_keras_hub_config(directory)  # a preset of another architecture: an error naming it
        return "keras_hub", os.path.join(directory, WEIGHTS_NAME)
    weights = [name for name in WEIGHT_NAMES if name in names]
    if CONFIG_NAME in names and weights:
        return "hugging_face", os.path.join(directory, weights[0])
    if GOOGLE_CONFIG_NAME in names:
        return "google", resolve_checkpoint_prefix(directory)
    shown = ", ".join(sorted(names)[:12]) + (", ..." if len(names) > 12 else "") if names else "nothing"
    raise ValueError(
        f"{directory} is not a BERT checkpoint folder: expected {KERAS_ENCODER_NAME} (ours), {CONFIG_NAME} with "
        f"{' or '.join(WEIGHT_NAMES)} (Hugging Face), or {GOOGLE_CONFIG_NAME} with bert_model.ckpt.* "
        f"(Google), or {CONFIG_NAME} with {WEIGHTS_NAME} (KerasHub); it holds {shown}."
    )


def _vocab_name(kind: str) -> str:
    """Where in its folder a checkpoint of `kind` keeps its vocabulary."""
    return VOCABULARY_PATH if kind == "keras_hub" else VOCAB_NAME


def _vocab_file(kind: str, directory: str) -> str:
    return os.path.join(directory, _vocab_name(kind))


def _lower_case(kind: str, directory: str, vocab_file: str) -> tuple[bool, str]:
    """(lower_case, why) by the rule of the kind's loader (see the module docstring)."""
    if kind == "keras_hub":
        tokenizer = read_keras_hub_tokenizer(directory)
        return tokenizer.lower_case, f"lowercase in {tokenizer.source}"
    config_path = os.path.join(directory, TOKENIZER_CONFIG_NAME)
    found = tf.io.gfile.exists(config_path)
    if kind == "hugging_face" or (kind == "keras" and found):  # our exports write one, as HF's folders do
        why = f"do_lower_case in {config_path}" if found else f"no {config_path}: transformers' default"
        return read_hf_lower_case(directory), why
    tokens = load_vocabulary(vocab_file)
    lower_case = lower_case_from_vocabulary(tokens)
    if kind == "google" and lower_case_for_folder(directory, tokens) != lower_case:
        return not lower_case, f"the Google folder's name {os.path.basename(directory)}"
    return lower_case, f"the vocabulary {vocab_file} is {'uncased' if lower_case else 'cased'}"


def model_builder(kind: str) -> Callable[[BertConfig], BertEncoder | BertPretrainer]:
    """What builds a fresh `BertEncoder` ("encoder") or `BertPretrainer` ("pretrainer") from a config."""
    if kind not in MODEL_KINDS:
        raise ValueError(f"model must be one of {MODEL_KINDS}, got {kind!r}.")
    return BertEncoder if kind == "encoder" else lambda config: BertPretrainer(BertEncoder(config))


def from_google_checkpoint(
    directory: str | os.PathLike, model: str = "encoder", seq_length: int = 128, lower_case: bool | None = None
) -> tuple[BertEncoder | BertPretrainer, BertPreprocessor]:
    """Builds a model and its preprocessor from a Google BERT release folder.

    The folder holds `bert_config.json`, `vocab.txt` and `bert_model.ckpt.*` (as in
    `uncased_L-12_H-768_A-12/` or the Small BERTs `uncased_L-4_H-256_A-4/`), local or on any
    `tf.io.gfile` path.

    Args:
        directory: the release folder.
        model: "encoder" (a `BertEncoder`; the checkpoint's pre-training heads are ignored) or
            "pretrainer" (a `BertPretrainer`; the checkpoint must hold the `cls/*` heads).
        seq_length, lower_case: as for `from_checkpoint` (None reads the casing from the
            folder's name, else from its vocabulary).

    Returns:
        (model, preprocessor): the loaded model and a `BertPreprocessor` for its vocabulary.

    Raises:
        FileNotFoundError, ValueError: naming the file, for a missing or invalid
            `bert_config.json`, `vocab.txt` or checkpoint; `CheckpointMismatchError` (a
            ValueError) when the checkpoint does not fit (other than unused heads of an encoder).
    """
    return load_folder("google", os.fspath(directory), seq_length, lower_case, build=model_builder(model))


def from_hf_checkpoint(
    directory: str | os.PathLike, model: str = "encoder", seq_length: int = 128, lower_case: bool | None = None
) -> tuple[BertEncoder | BertPretrainer, BertPreprocessor]:
    """As `from_google_checkpoint`, from a Hugging Face BERT folder: `config.json`,
    `model.safetensors` (or `pytorch_model.bin`) and `vocab.txt`; the heads are `cls.*`, and
    `lower_case` None reads `do_lower_case` from `tokenizer_config.json` (default True)."""
    return load_folder("hugging_face", os.fspath(directory), seq_length, lower_case, build=model_builder(model))
