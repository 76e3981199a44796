"""BertTokenizer: id parity with the original BERT tokenizer and Hugging Face, errors, serialization."""

import sys
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.text.tokenizer import BertTokenizer, load_vocabulary

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "."]
# The code-point sweep covers planes 0-2; inside these large uniform blocks (CJK ideographs,
# Hangul syllables, private use, CJK extensions) it takes the block edges and every 97th point.
SWEEP_END = 0x30000
UNIFORM_BLOCKS = ((0x3400, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xF8FF), (0x20000, 0x2FFFF))


def _ours(tokenizer, texts, batch_size=4096):
    ids = []
    for start in range(0, len(texts), batch_size):
        ids += tokenizer(tf.constant(texts[start:start + batch_size])).to_list()
    return ids


def _first_mismatches(texts, expected, actual, vocab, limit=5):
    bad = [(t, e, a) for t, e, a in zip(texts, expected, actual) if e != a]
    examples = [(t[:60], [vocab[i] for i in e][:12], [vocab[i] for i in a][:12]) for t, e, a in bad[:limit]]
    return len(bad), examples


@pytest.mark.slow
@pytest.mark.parametrize("lower_case", [True, False])
def test_ids_match_original_full_tokenizer(real_vocab_file, real_vocab, real_sentences, edge_cases,
                                           original_tokenization, lower_case):
    texts = real_sentences + edge_cases
    if not lower_case:
        texts = real_sentences[::4] + edge_cases
    assert len(texts) >= 2000
    reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=lower_case)
    expected = [reference.convert_tokens_to_ids(reference.tokenize(t)) for t in texts]
    # The original's WordPiece gives up on words over 200 characters.
    ours = BertTokenizer(real_vocab_file, lower_case=lower_case, max_chars_per_token=200)
    count, examples = _first_mismatches(texts, expected, _ours(ours, texts), real_vocab)
    assert count == 0, examples


@pytest.mark.slow
def test_ids_match_original_across_unicode(real_vocab_file, real_vocab, original_tokenization):
    def in_sweep(cp):
        for lo, hi in UNIFORM_BLOCKS:
            if lo <= cp <= hi:
                return cp - lo < 2 or hi - cp < 2 or (cp - lo) % 97 == 0
        return True

    # Python 3.11's Unicode database (version 14) is older than TensorFlow's (ICU, RE2): code
    # points it does not know (category Cn) are left out.
    chars = [chr(cp) for cp in range(0x20, SWEEP_END)
             if not 0xD800 <= cp < 0xE000 and in_sweep(cp) and unicodedata.category(chr(cp)) != "Cn"]
    assert len(chars) > 40_000
    texts = [f"a{c}b {c}X" for c in chars]  # inside a word, and starting one
    reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    expected = [reference.convert_tokens_to_ids(reference.tokenize(t)) for t in texts]
    count, examples = _first_mismatches(texts, expected, _ours(BertTokenizer(real_vocab_file), texts),
                                        real_vocab)
    assert count == 0, examples


@pytest.mark.slow
@pytest.mark.parametrize("lower_case", [True, False])
def test_ids_match_hugging_face(minilm_dir, real_vocab_file, real_vocab, real_sentences, edge_cases,
                                lower_case):
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    # Python's str.lower gives a final sigma (ΣΑΣ -> σας), Hugging Face does not; the original
    # BERT code uses str.lower and so do we (checked against it above).
    texts = real_sentences + [t for t in edge_cases if "Σ" not in t]
    if not lower_case:
        texts = real_sentences[::4] + [t for t in edge_cases if "Σ" not in t]
    ours = _ours(BertTokenizer(real_vocab_file, lower_case=lower_case), texts)

    wordpiece = BertWordPieceTokenizer(real_vocab_file, lowercase=lower_case)
    expected = [e.ids for e in wordpiece.encode_batch(texts, add_special_tokens=False)]
    count, examples = _first_mismatches(texts, expected, ours, real_vocab)
    assert count == 0, examples

    if lower_case:  # the model folder holds the uncased tokenizer configuration
        fast = BertTokenizerFast.from_pretrained(minilm_dir)
        expected = fast(texts, add_special_tokens=False)["input_ids"]
        count, examples = _first_mismatches(texts, expected, ours, real_vocab)
        assert count == 0, examples


def test_words_match_original_basic_tokenizer(real_vocab_file, real_sentences, edge_cases,
                                              original_tokenization):
    texts = real_sentences[:300] + edge_cases
    reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    expected = [
        [reference.convert_tokens_to_ids(reference.wordpiece_tokenizer.tokenize(word))
         for word in reference.basic_tokenizer.tokenize(text)]
        for text in texts
    ]
    ours = BertTokenizer(real_vocab_file, max_chars_per_token=200).tokenize_words(tf.constant(texts))
    assert ours.to_list() == expected


def test_invalid_utf8_input_is_dropped_like_the_original(real_vocab_file, original_tokenization):
    # The original decodes bytes with errors="ignore"; so invalid sequences vanish here too.
    texts = [b"caf\xc3 ok", b"ab\xffcd \xe4\xb8 end", b"\xc3", b"fine \xed\xa0\x80 surrogate", b"\x80\x80"]
    reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    expected = [reference.convert_tokens_to_ids(reference.tokenize(t)) for t in texts]
    assert BertTokenizer(real_vocab_file)(tf.constant(texts)).to_list() == expected


def test_special_token_ids_and_lookups(real_vocab_file, real_vocab):
    tokenizer = BertTokenizer(real_vocab_file)
    assert tokenizer.vocab_size == len(real_vocab) == 30522
    assert tokenizer.vocabulary == real_vocab
    for name, token in [("pad_id", "[PAD]"), ("unk_id", "[UNK]"), ("cls_id", "[CLS]"),
                        ("sep_id", "[SEP]"), ("mask_id", "[MASK]")]:
        assert getattr(tokenizer, name) == real_vocab.index(token)
    assert tokenizer.id_to_token(tokenizer.token_to_id("hello")) == "hello"
    with pytest.raises(KeyError, match="'zzzqqq' is not in the vocabulary"):
        tokenizer.token_to_id("zzzqqq")
    with pytest.raises(IndexError, match="30522"):
        tokenizer.id_to_token(30522)


def test_scalar_input_and_bad_shapes():
    tokenizer = BertTokenizer(TINY_VOCAB)
    assert tokenizer("the cats").numpy().tolist() == [5, 6, 8]
    assert tokenizer.tokenize_words("the cats").to_list() == [[5], [6, 8]]
    with pytest.raises(ValueError, match="scalar or a \\[batch\\] vector"):
        tokenizer(tf.constant([["the"]]))
    with pytest.raises(TypeError, match="expects tf.string input, got int32"):
        tokenizer(tf.constant([1, 2]))


def test_detokenize_joins_word_pieces(real_vocab_file, real_sentences, original_tokenization):
    texts = real_sentences[:200]
    reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    expected = [" ".join(reference.tokenize(t)).replace(" ##", "") for t in texts]
    tokenizer = BertTokenizer(real_vocab_file)
    ids = tokenizer(tf.constant(texts))
    assert [s.decode() for s in tokenizer.detokenize(ids).numpy()] == expected
    # Padded dense ids: [PAD] is skipped.
    dense = ids.to_tensor(default_value=tokenizer.pad_id)
    assert [s.decode() for s in tokenizer.detokenize(dense).numpy()] == expected


def test_missing_vocab_file_names_the_path(tmp_path):
    path = tmp_path / "nowhere" / "vocab.txt"
    with pytest.raises(FileNotFoundError, match=str(path)):
        BertTokenizer(str(path))


def test_vocab_without_special_tokens_names_them(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\nthe\ncat\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab.txt lacks the special token\(s\) \[SEP\], \[MASK\]"):
        BertTokenizer(str(path))
    with pytest.raises(ValueError, match=r"lacks the special token\(s\) \[PAD\]"):
        BertTokenizer(TINY_VOCAB[1:])


def test_non_utf8_vocab_names_the_line(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"vocab.txt, line 6: not valid UTF-8"):
        load_vocabulary(str(path))


@pytest.mark.parametrize("lines, message", [
    (["[PAD]", "[UNK]", "", "[CLS]"], "line 3: empty token"),
    (["[PAD]", "[UNK]", "the", "the"], "line 4: token 'the' repeats line 3"),
])
def test_malformed_vocab_names_the_line(tmp_path, lines, message):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_vocabulary(str(path))


def test_vocab_file_and_token_list_agree(real_vocab_file, real_vocab):
    assert load_vocabulary(real_vocab_file) == real_vocab
    text = tf.constant(["Tokenizers load vocab.txt files or token lists."])
    assert BertTokenizer(real_vocab).call(text).to_list() == BertTokenizer(real_vocab_file)(text).to_list()


@pytest.mark.slow
def test_config_round_trip_and_keras_file(tmp_path, real_vocab_file, real_sentences):
    tokenizer = BertTokenizer(real_vocab_file, lower_case=False, max_chars_per_token=50)
    clone = BertTokenizer.from_config(tokenizer.get_config())
    texts = tf.constant(real_sentences[:50])
    assert clone(texts).to_list() == tokenizer(texts).to_list()
    assert (clone.lower_case, clone.max_chars_per_token) == (False, 50)

    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, tokenizer(inputs))
    model.save(tmp_path / "tokenizer.keras")
    reloaded = keras.saving.load_model(tmp_path / "tokenizer.keras")
    assert reloaded(texts).to_list() == tokenizer(texts).to_list()


@pytest.mark.slow
def test_works_in_tf_data_and_tf_function():
    tokenizer = BertTokenizer(TINY_VOCAB)
    dataset = tf.data.Dataset.from_tensor_slices(["The cat.", "Cats sat!", ""]).batch(2).map(tokenizer)
    assert [batch.to_list() for batch in dataset] == [[[5, 6, 9], [6, 8, 7, 1]], [[]]]
    words = tf.function(tokenizer.tokenize_words)(tf.constant(["the cats sat"]))
    assert words.to_list() == [[[5], [6, 8], [7]]]
    assert np.array_equal(tokenizer.detokenize(tf.constant([[2, 6, 8, 3, 0]])).numpy(), [b"[CLS] cats [SEP]"])


def test_documented_example_runs():
    assert sys.modules[BertTokenizer.__module__].__doc__
    tokenizer = BertTokenizer(TINY_VOCAB)
    assert tokenizer(["The cats sat."]).to_list() == [[5, 6, 8, 7, 9]]


def test_tokens_the_wordpiece_trie_refuses_work_as_in_the_original(tmp_path, original_tokenization):
    # tensorflow-text's trie refuses a NUL, tokens over 256 bytes and vocabularies without a plain
    # whole-word token; the original accepts all three, and can never produce the first kind or a
    # token longer than its word limit.
    path = tmp_path / "vocab.txt"
    tokens = [*TINY_VOCAB, "ca\x00t", "\x00", "a\u200bb", "\ufffd", "x" * 300, "##" + "y" * 300, "ab"]
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    texts = ["the cat ca\x00t \x00 a\u200bb ab " + "x" * 300, "y" * 301, ""]
    for lower_case in (True, False):
        reference = original_tokenization.FullTokenizer(str(path), do_lower_case=lower_case)
        expected = [reference.convert_tokens_to_ids(reference.tokenize(t)) for t in texts]
        ours = BertTokenizer(str(path), lower_case=lower_case, max_chars_per_token=200)
        assert ours(tf.constant(texts)).to_list() == expected
    special_only = BertTokenizer(TINY_VOCAB[:5])
    assert special_only(tf.constant(["any text at all."])).to_list() == [[1, 1, 1, 1, 1]]


def test_a_long_token_real_text_could_reach_names_the_line(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(t + "\n" for t in [*TINY_VOCAB, "é" * 129]), encoding="utf-8")
    # 129 characters (258 bytes): unreachable with the 100-character word limit, reachable with 200.
    assert BertTokenizer(str(path)).vocab_size == len(TINY_VOCAB) + 1
    with pytest.raises(ValueError, match=r"vocab.txt, line 11: token .* is 258 bytes long; .* at most 256"):
        BertTokenizer(str(path), max_chars_per_token=200)
