"""The files beside the weights (release.py): the vocabulary a writer accepts, and the casing a
folder is read with."""

import os

import pytest
import tensorflow as tf

from keras_bert_lite import BertConfig, BertEncoder, BertPreprocessor, load_vocabulary
from keras_bert_lite.interop import save_google_checkpoint, save_hf_checkpoint
from keras_bert_lite.interop.release import (
    lower_case_for_folder,
    lower_case_from_vocabulary,
    resolve_vocabulary,
)
from keras_bert_lite.models.checkpoint_folder import from_google_checkpoint

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
UNCASED = [*SPECIALS, "[unused0]", "the", "cat", "sat", "##s", "."]
CASED = [*UNCASED, "The", "Cat"]
TINY = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24,
                  max_position_embeddings=32)


@pytest.fixture(scope="module")
def encoder():
    return BertEncoder(TINY)


def test_casing_from_the_vocabulary_and_the_folder_name(real_vocab_file):
    assert lower_case_from_vocabulary(load_vocabulary(real_vocab_file))  # the real uncased one: no capitals
    assert lower_case_from_vocabulary(UNCASED) and not lower_case_from_vocabulary(CASED)
    assert lower_case_for_folder("models/uncased_L-12_H-768_A-12/", CASED)
    assert not lower_case_for_folder("gs://bucket/multi_cased_L-12_H-768_A-12", UNCASED)
    assert not lower_case_for_folder("converted", CASED) and lower_case_for_folder("converted", UNCASED)


def test_vocabulary_sources():
    assert resolve_vocabulary(CASED, TINY).lower_case is False
    assert resolve_vocabulary(CASED, TINY, lower_case=True).lower_case is True
    tokenizer_side = resolve_vocabulary(BertPreprocessor(UNCASED, lower_case=False), TINY)
    assert tokenizer_side.lower_case is False and tokenizer_side.tokens == tuple(UNCASED)
    assert resolve_vocabulary(UNCASED, TINY).text == "".join(f"{token}\n" for token in UNCASED)


def test_writer_checks_the_vocabulary_before_writing(tmp_path, real_vocab_file, encoder):
    for vocabulary, error, message in (
        (real_vocab_file, ValueError, "has 30522 tokens but the model's vocab_size is 40"),
        (UNCASED[1:], ValueError, r"lacks the special token\(s\) \[PAD\]"),
        ([*UNCASED, "two\nlines"], ValueError, r"token 11 \('two\\nlines'\) cannot be a line of vocab.txt"),
        ([*UNCASED, " the"], ValueError, "cannot be a line of vocab.txt"),
        ([*UNCASED, "\ud800"], ValueError, "cannot be a line of vocab.txt"),
        ([*UNCASED, "the"], ValueError, r"token 11 \('the'\) appears twice"),
        ([*UNCASED, 7], ValueError, "token 11 \\(7\\) cannot be a line"),
        (b"vocab.txt", TypeError, "vocabulary must be a vocab.txt path, a list of tokens"),
        (tmp_path / "missing.txt", FileNotFoundError, "missing.txt"),
    ):
        for save, path in ((save_hf_checkpoint, tmp_path / "hf"), (save_google_checkpoint, tmp_path / "g" / "m.ckpt")):
            with pytest.raises(error, match=message):
                save(encoder, path, vocabulary)
    assert not (tmp_path / "hf").exists() and not (tmp_path / "g").exists()


def test_casing_of_a_google_folder(tmp_path, encoder, caplog):
    """Google folders say their casing only in their name; other names take the vocabulary's."""
    save_google_checkpoint(encoder, tmp_path / "converted" / "bert_model.ckpt", CASED)
    _, preprocessor = from_google_checkpoint(tmp_path / "converted", seq_length=16)
    assert not preprocessor.tokenizer.lower_case
    assert preprocessor(tf.constant(["The cat"]))["input_word_ids"].numpy()[0, :4].tolist() == [2, 11, 7, 3]
    caplog.set_level("WARNING")
    save_google_checkpoint(encoder, tmp_path / "uncased_L-1" / "bert_model.ckpt", BertPreprocessor(CASED, lower_case=False))
    assert "load it with lower_case=False, or name the folder cased_* / uncased_*" in caplog.text
    _, preprocessor = from_google_checkpoint(tmp_path / "uncased_L-1", seq_length=16, lower_case=False)
    assert not preprocessor.tokenizer.lower_case
    assert sorted(os.listdir(tmp_path / "uncased_L-1")) == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001",
                                                            "bert_model.ckpt.index", "vocab.txt"]
