"""Hugging Face Hub names (`hf://org/name`, `hf://org/name@revision`) to folders in its cache.

Only a name written with the `hf://` prefix goes to the Hub: anything else is a local (or
`tf.io.gfile`) path, so a typo in a path never becomes a network request.

The files of a Hugging Face BERT folder are fetched with `huggingface_hub` (the optional extra
`pip install keras_bert_lite[hub]`) into its standard cache, shared with `transformers` and
KerasHub, so a model is downloaded once and loads offline afterwards. The cache and offline mode
are `huggingface_hub`'s own settings (`HF_HUB_CACHE` or `HF_HOME`, and `HF_HUB_OFFLINE=1`, read
when it is imported): offline, only the cache is read.

Example:

    >>> hub_folder("hf://sentence-transformers/all-MiniLM-L6-v2@main")  # then any folder loader
    '~/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/c9745ed1...'
    >>> hub_folder("output/pretrain") is None  # a path: never looked up on the Hub
    True
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from keras_bert_lite.interop.huggingface import (
    CONFIG_NAME,
    PYTORCH_NAME,
    SAFETENSORS_NAME,
    TOKENIZER_CONFIG_NAME,
)
from keras_bert_lite.interop.release import VOCAB_NAME

HUB_PREFIX = "hf://"


def hub_folder(path: str | os.PathLike) -> str | None:
    """The cache folder holding the files `from_hf_checkpoint` reads of the Hub model `path` names
    (fetched unless cached), or None when `path` is not a Hub name.

    A Hub name is `hf://org/name`, which may end in `@revision` (a branch, tag or commit hash:
    `hf://org/name@v1.0`; default: "main"); anything else is a path (None). Only `config.json`,
    `vocab.txt`, `tokenizer_config.json` (if the model has one) and the weights are fetched:
    `model.safetensors`, or else `pytorch_model.bin` (read weights-only).

    Raises:
        ImportError: `huggingface_hub` is not installed (naming the extra that installs it).
        FileNotFoundError: naming `path`, the revision, the missing file and where it was looked
            for, when the model or a needed file is neither in the cache nor reachable on the Hub.
    """
    if not (isinstance(path, str) and path.startswith(HUB_PREFIX)):
        return None
    repo_id, _, revision = path.removeprefix(HUB_PREFIX).partition("@")
    try:
        import huggingface_hub  # optional: only Hub names need it
        from huggingface_hub import constants, errors
    except ImportError:
        raise ImportError(f"Loading {repo_id} from the Hugging Face Hub needs huggingface_hub: "
                          "pip install keras_bert_lite[hub]") from None
    offline = constants.HF_HUB_OFFLINE
    where = (f"in the Hugging Face cache {constants.HF_HUB_CACHE}"
             + (" (HF_HUB_OFFLINE is set)" if offline else " or on the Hub"))
    tried = f"Hugging Face Hub model {repo_id} at revision {revision or 'main'}"

    def fetch(filename: str, required: str = "") -> str | None:
        try:
            return huggingface_hub.hf_hub_download(
                repo_id, filename, revision=revision or None, local_files_only=offline
            )
        except errors.EntryNotFoundError as e:  # not in the model, or not cached while offline or unreachable
            unreachable = isinstance(e, errors.LocalEntryNotFoundError) and not offline
            if required:  # stop at the first: each look-up of an unreachable Hub retries for seconds
                reason = f" ({e})" if unreachable else "."
                raise FileNotFoundError(f"{tried}: no {required} {where}{reason}") from None
            return None

    try:
        config = fetch(CONFIG_NAME, CONFIG_NAME)
        fetch(VOCAB_NAME, VOCAB_NAME)
        fetch(SAFETENSORS_NAME) or fetch(PYTORCH_NAME, f"{SAFETENSORS_NAME} or {PYTORCH_NAME}")
        fetch(TOKENIZER_CONFIG_NAME)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as e:  # no such repository or revision, no access
        raise FileNotFoundError(f"{tried} not found {where}: {e}") from None
    return os.path.dirname(config)


def fetch_optional_files(path: str | os.PathLike, filenames: Sequence[str]) -> None:
    """Fetches `filenames` (paths inside the model, e.g. "modules.json") of the Hub model `path`
    names into the folder `hub_folder(path)` returns, skipping those the model does not have;
    does nothing when `path` is not a Hub name. For files only some models have, such as
    sentence-transformers' configs.

    Raises:
        As `hub_folder`.
    """
    if hub_folder(path) is None:
        return
    import huggingface_hub
    from huggingface_hub import constants, errors

    repo_id, _, revision = os.fspath(path).removeprefix(HUB_PREFIX).partition("@")
    for filename in filenames:
        try:
            huggingface_hub.hf_hub_download(repo_id, filename, revision=revision or None,
                                            local_files_only=constants.HF_HUB_OFFLINE)
        except errors.EntryNotFoundError:
            pass
