"""BertTokenizer.tokenize_with_offsets: the ids of `tokenizer(...)`, each piece with its word's span."""

import unicodedata

import pytest
import tensorflow as tf

from keras_bert_lite.text.tokenizer import BertTokenizer


def _words(texts, starts, ends):
    """The source text of each piece's span, per row."""
    return [
        [text.encode("utf-8")[s:e].decode("utf-8") for s, e in zip(row_starts, row_ends)]
        for text, row_starts, row_ends in zip(texts, starts.to_list(), ends.to_list())
    ]


def _is_whitespace(char):
    """The original's whitespace, and the line/paragraph separators its `str.split` splits on."""
    return char in " \t\n\r" or unicodedata.category(char or "a") in ("Zs", "Zl", "Zp")


def _check_spans_hold_their_words(tokenizer, reference, texts):
    """Ids equal `tokenizer(texts)`; every span re-tokenizes (by the original) to exactly its pieces."""
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    assert ids.dtype == tf.int32 and starts.dtype == ends.dtype == tf.int64
    assert ids.to_list() == tokenizer(tf.constant(texts)).to_list()
    bad = []
    for text, row_ids, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        source = text.encode("utf-8")
        spans = sorted(set(zip(row_starts, row_ends)))
        for (_, end), (next_start, _) in zip(spans, spans[1:]):
            assert end <= next_start, (text, spans)
        for start, end in spans:
            pieces = [i for i, s, e in zip(row_ids, row_starts, row_ends) if (s, e) == (start, end)]
            word = source[start:end].decode("utf-8")
            expected = reference.convert_tokens_to_ids(reference.tokenize(word))
            if pieces != expected or _is_whitespace(word[:1]) or _is_whitespace(word[-1:]):
                bad.append((text[:40], word, pieces, expected))
    assert not bad, bad[:5]


def test_ids_equal_call_and_spans_hold_whole_words(real_vocab_file, real_sentences, edge_cases,
                                                   original_tokenization):
    reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    tokenizer = BertTokenizer(real_vocab_file, max_chars_per_token=200)
    _check_spans_hold_their_words(tokenizer, reference, real_sentences[:1500] + edge_cases)


def test_cased_spans(real_vocab_file, edge_cases, original_tokenization):
    reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=False)
    tokenizer = BertTokenizer(real_vocab_file, lower_case=False, max_chars_per_token=200)
    _check_spans_hold_their_words(tokenizer, reference, edge_cases)


@pytest.mark.slow
def test_spans_of_every_character_that_normalisation_resizes(real_vocab_file, original_tokenization):
    # Characters whose normalised UTF-8 length differs from their own (removed controls, lower-casing
    # that changes length, decompositions, accents) are where byte offsets can go wrong.
    def normalized(char):
        if unicodedata.category(char) in ("Cc", "Cf") and char not in "\t\n\r":
            return ""
        decomposed = unicodedata.normalize("NFD", char.lower())
        return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")

    chars = [chr(cp) for cp in range(0x80, 0x30000)
             if not 0xD800 <= cp < 0xE000 and unicodedata.category(chr(cp)) != "Cn"
             and len(normalized(chr(cp)).encode()) != len(chr(cp).encode())]
    assert len(chars) > 1000
    texts = [f"a{c}b {c}X x{c} {c}" for c in chars]
    reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    _check_spans_hold_their_words(BertTokenizer(real_vocab_file, max_chars_per_token=200), reference, texts)


@pytest.mark.parametrize("text, words", [
    ("The cat's hat.", ["The", "cat", "'", "s", "hat", "."]),
    ("  two  spaces\tand\ttabs\n", ["two", "spaces", "and", "tabs"]),
    ("Héllo wörld, café", ["Héllo", "wörld", ",", "café"]),
    ("cafe\u0301 na\u0308ive", ["cafe\u0301", "na\u0308ive"]),  # decomposed accents stay in their word
    ("日本語 text中文", ["日", "本", "語", "text", "中", "文"]),
    ("(a)[b]{c} $5+3=8", ["(", "a", ")", "[", "b", "]", "{", "c", "}", "$", "5", "+", "3", "=", "8"]),
    ("¿Qué? «sí» — ok…", ["¿", "Qué", "?", "«", "sí", "»", "—", "ok", "…"]),
    # Removed characters: inside a word they join it; right after it they belong to it.
    ("ctrl\x00nul\x01 zw\u200bsp end\x7f", ["ctrl\x00nul\x01", "zw\u200bsp", "end\x7f"]),
    ("\u200b\ufefflead", ["lead"]),
    ("İstanbul Straße ΟΔΥΣΣΕΥΣ", ["İstanbul", "Straße", "ΟΔΥΣΣΕΥΣ"]),
    ("no\u00a0break\u3000ideographic\u2028line", ["no", "break", "ideographic", "line"]),
    ("", []),
])
def test_spans_on_hand_picked_text(original_tokenization, text, words):
    # A vocabulary holding each of the original's words whole: one piece per word.
    normalized = original_tokenization.BasicTokenizer(do_lower_case=True).tokenize(text)
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted({"a", *normalized})])
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([text]))
    assert [tokenizer.id_to_token(i) for i in ids[0].numpy()] == normalized
    assert _words([text], starts, ends)[0] == words


def test_pieces_of_a_word_share_its_span_and_overlong_words_are_one_unk(real_vocab_file):
    tokenizer = BertTokenizer(real_vocab_file)  # 100 characters at most per word
    texts = ["unaffable things", "é" * 60 + "x " + "б" * 101 + " ok"]
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    assert ids.to_list() == tokenizer(tf.constant(texts)).to_list()
    assert [tokenizer.id_to_token(i) for i in ids[0].numpy()] == ["una", "##ffa", "##ble", "things"]
    assert _words(texts, starts, ends)[0] == ["unaffable"] * 3 + ["things"]
    row = ids.to_list()[1]
    assert row[-2:] == [tokenizer.unk_id, tokenizer.token_to_id("ok")]
    assert _words(texts, starts, ends)[1][-2:] == ["б" * 101, "ok"]


@pytest.mark.slow
def test_scalar_input_tf_function_and_invalid_utf8(real_vocab_file):
    tokenizer = BertTokenizer(real_vocab_file)
    ids, starts, ends = tokenizer.tokenize_with_offsets("Hello, world")
    assert ids.shape.rank == 1 and starts.numpy().tolist() == [0, 5, 7]
    assert ends.numpy().tolist() == [5, 6, 12]
    text = b"caf\xc3 ok \xff\xfeend"  # invalid bytes are dropped, like the original's decode("ignore")
    graph = tf.function(tokenizer.tokenize_with_offsets)(tf.constant([text]))
    assert graph[0].to_list() == tokenizer(tf.constant([text])).to_list()
    spans = zip(graph[1][0].numpy(), graph[2][0].numpy())
    assert [text[s:e] for s, e in spans] == [b"caf\xc3", b"ok", b"end"]


@pytest.mark.slow
def test_offsets_in_a_saved_model(tmp_path, small_vocab):
    tokenizer = BertTokenizer(small_vocab, special_tokens_in_strings=True)

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def offsets(self, texts):
            ids, starts, ends = self.tokenizer.tokenize_with_offsets(texts)
            return {"ids": ids.to_tensor(-1), "starts": starts.to_tensor(-1), "ends": ends.to_tensor(-1)}

    tf.saved_model.save(Serving(), str(tmp_path / "export"))
    loaded = tf.saved_model.load(str(tmp_path / "export"))
    texts = tf.constant(["Héllo [MASK] wörld, café\u0301!", "", "plain ascii text"])
    served = loaded.offsets(texts)
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    assert served["ids"].numpy().tolist() == ids.to_tensor(-1).numpy().tolist()
    assert served["starts"].numpy().tolist() == starts.to_tensor(-1).numpy().tolist()
    assert served["ends"].numpy().tolist() == ends.to_tensor(-1).numpy().tolist()
