"""find_checkpoint / from_checkpoint: our folders and .keras files, Google release folders (and
their checkpoint prefix), Hugging Face folders (the real all-MiniLM-L6-v2); vocabulary and casing
read from the folder; clear errors naming the path."""

import logging
import shutil

import numpy as np
import pytest

from keras_bert_lite.config import BertConfig
from keras_bert_lite.interop import read_hf_config, save_google_checkpoint, save_hf_checkpoint
from keras_bert_lite.models.checkpoint_folder import find_checkpoint, from_checkpoint
from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import BertEncoder

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "sat", "on", "mat", "dog", "##s", ".", ",", "a"]
UNCASED = SPECIAL + WORDS
CASED = SPECIAL + WORDS + ["The", "Cat"]
TEXTS = ["The cat sat on the mat.", "Dogs sat, a cat sat."]


def _write_vocab(path, tokens):
    path.write_text("\n".join(tokens) + "\n")
    return path


@pytest.fixture(scope="module")
def encoder():
    return BertEncoder(BertConfig.preset("tiny", vocab_size=len(CASED), num_hidden_layers=1,
                                         max_position_embeddings=32))


@pytest.fixture(scope="module")
def folders(tmp_path_factory, encoder):
    """One folder of each kind holding `encoder`'s weights."""
    root = tmp_path_factory.mktemp("checkpoints")
    ours = root / "pretrain"
    ours.mkdir()
    encoder.save(str(ours / "encoder.keras"))
    encoder.config.to_json_file(ours / "bert_config.json")  # as export_pretrained writes it
    _write_vocab(ours / "vocab.txt", UNCASED)
    google = root / "my_renamed_bert"  # not Google's naming: casing comes from the vocabulary
    google.mkdir()
    save_google_checkpoint(encoder, str(google / "bert_model.ckpt"))
    encoder.config.to_json_file(google / "bert_config.json")
    _write_vocab(google / "vocab.txt", CASED)
    hf = root / "hf"
    save_hf_checkpoint(encoder, str(hf), CASED)  # with tokenizer_config.json: do_lower_case false
    return {"keras": ours, "google": google, "hugging_face": hf}


def _outputs(encoder, preprocessor, texts=TEXTS):
    return encoder(preprocessor(texts), training=False)["sequence_output"].numpy()


@pytest.mark.parametrize("kind, lower_case, source", [
    ("keras", True, "vocabulary"), ("google", False, "vocabulary"), ("hugging_face", False, "tokenizer_config.json"),
])
def test_each_kind_loads_the_same_encoder_and_its_vocabulary(folders, encoder, kind, lower_case, source):
    folder = find_checkpoint(folders[kind])
    assert folder.kind == kind and folder.vocab_file == str(folders[kind] / "vocab.txt")
    assert folder.lower_case is lower_case and source in folder.lower_case_source
    loaded, preprocessor = from_checkpoint(folders[kind], seq_length=16)
    assert preprocessor.seq_length == 16 and preprocessor.tokenizer.lower_case is lower_case
    assert preprocessor.tokenizer.vocabulary == (UNCASED if lower_case else CASED)
    ids = preprocessor(TEXTS)["input_word_ids"].numpy()
    assert (CASED.index("The") in ids[0]) is not lower_case  # the cased vocabulary keeps "The"
    # Same weights: identical outputs to the saved encoder (tolerance 1e-6: float32 round trips are exact).
    np.testing.assert_allclose(_outputs(loaded, preprocessor), _outputs(encoder, preprocessor), atol=1e-6)


def test_google_checkpoint_prefix_as_the_original_scripts_take_it(folders):
    folder = find_checkpoint(folders["google"] / "bert_model.ckpt")
    assert folder.kind == "google" and folder.directory == str(folders["google"])
    assert folder.weights == str(folders["google"] / "bert_model.ckpt")


def test_keras_file_of_a_task_model_with_vocab_beside_it(tmp_path, encoder):
    classifier = BertClassifier(encoder, num_classes=2)
    classifier.save(str(tmp_path / "best_model.keras"))
    with pytest.raises(FileNotFoundError, match=r"best_model.keras: no vocab.txt beside the weights \(looked for .*vocab.txt\)"):
        find_checkpoint(tmp_path / "best_model.keras")
    vocab = _write_vocab(tmp_path / "words.txt", UNCASED)
    loaded, preprocessor = from_checkpoint(tmp_path / "best_model.keras", seq_length=16, vocab_file=vocab)
    assert isinstance(loaded, BertEncoder) and preprocessor.tokenizer.vocabulary == UNCASED
    np.testing.assert_allclose(_outputs(loaded, preprocessor), _outputs(encoder, preprocessor), atol=1e-6)
    _write_vocab(tmp_path / "vocab.txt", UNCASED)
    assert find_checkpoint(tmp_path / "best_model.keras").vocab_file == str(tmp_path / "vocab.txt")


def test_real_hugging_face_folder_reads_casing_from_its_tokenizer_config(minilm_dir):
    from safetensors.numpy import load_file

    folder = find_checkpoint(minilm_dir)
    assert folder.kind == "hugging_face" and folder.weights.endswith("model.safetensors")
    assert folder.lower_case is True and "tokenizer_config.json" in folder.lower_case_source
    encoder, preprocessor = from_checkpoint(minilm_dir, seq_length=24)
    assert encoder.config == read_hf_config(minilm_dir)
    assert preprocessor.tokenizer.lower_case is True and preprocessor.tokenizer.vocab_size == 30522
    tables = load_file(folder.weights)
    np.testing.assert_array_equal(np.asarray(encoder.embeddings.word_embeddings),
                                  tables["embeddings.word_embeddings.weight"])


def test_casing_follows_the_rule_of_each_kind_s_loader(folders, tmp_path):
    # Google's names decide over the vocabulary, as in from_google_checkpoint.
    named = tmp_path / "uncased_L-1_H-128_A-2"
    shutil.copytree(folders["google"], named)
    folder = find_checkpoint(named)
    assert folder.lower_case is True and "uncased_L-1_H-128_A-2" in folder.lower_case_source
    # A Hugging Face folder without tokenizer_config.json lower-cases, as transformers does.
    bare = tmp_path / "bare_hf"
    shutil.copytree(folders["hugging_face"], bare)
    (bare / "tokenizer_config.json").unlink()
    folder = find_checkpoint(bare)
    assert folder.lower_case is True and "transformers' default" in folder.lower_case_source
    _, preprocessor = from_checkpoint(bare, seq_length=16)
    assert preprocessor.tokenizer.lower_case is True


def test_a_lower_case_that_contradicts_the_vocabulary_is_a_warning(folders, caplog):
    with caplog.at_level(logging.WARNING):
        _, preprocessor = from_checkpoint(folders["google"], seq_length=16, lower_case=True)
    assert preprocessor.tokenizer.lower_case is True  # the caller decides
    assert "lower_case=True, but the vocabulary" in caplog.text and "is cased" in caplog.text


def test_errors_name_the_path(tmp_path, folders):
    with pytest.raises(FileNotFoundError, match="missing_folder"):
        find_checkpoint(tmp_path / "missing_folder")
    with pytest.raises(FileNotFoundError, match=r"No checkpoint at .*nothing.keras: no such file or folder"):
        find_checkpoint(tmp_path / "nothing.keras")
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match=r"stray is not a BERT checkpoint folder: expected encoder.keras .* it holds notes.txt"):
        find_checkpoint(stray)
    no_vocab = tmp_path / "no_vocab"
    shutil.copytree(folders["google"], no_vocab)
    (no_vocab / "vocab.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"no_vocab: no vocab.txt"):
        find_checkpoint(no_vocab)
    two = tmp_path / "two_checkpoints"
    shutil.copytree(folders["google"], two)
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(two / f"bert_model.ckpt{suffix}", two / f"other.ckpt{suffix}")
    with pytest.raises(ValueError, match="holds several checkpoints"):
        find_checkpoint(two / "other.ckpt")
    with pytest.raises(ValueError, match=r"seq_length must be in \[3, max_position_embeddings=32\], got 64"):
        from_checkpoint(folders["keras"], seq_length=64)  # more than max_position_embeddings=32
