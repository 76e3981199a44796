"""BertTokenizer options, each against the original that has it: Google's tokenization tests (ported, all
31 assertions, `preserve_unused_tokens`), Hugging Face's special tokens in text and `strip_accents`."""

import pytest
import tensorflow as tf
from absl.testing import flagsaver

from keras_bert_lite.text.normalization import normalize_text
from keras_bert_lite.text.tokenizer import BertTokenizer

# Google's tokenization_test.py vocabulary; [PAD] and [MASK] (which we require) go last, so ids match.
GOOGLE_TEST_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ",",
                     "[unused0]", "[PAD]", "[MASK]"]
GOOGLE_TEST_TEXT = "UNwant\u00E9d,running [unused0] [CLS] [unused55]"


def _tokens(tokenizer, text):
    return [tokenizer.id_to_token(i) for i in tokenizer(tf.constant([text]))[0].numpy()]


def _basic_tokens(text, lower_case=True):
    """The original `BasicTokenizer(do_lower_case).tokenize(text)`, from our word spans."""
    tokenizer = BertTokenizer(GOOGLE_TEST_VOCAB, lower_case=lower_case)
    _, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([text]))
    spans = sorted(set(zip(starts[0].numpy(), ends[0].numpy())))
    words = tf.constant([text.encode("utf-8")[s:e] for s, e in spans], tf.string)
    return [w.decode("utf-8") for w in normalize_text(words, lower_case).numpy()]


class TestGoogleTokenizationTest:
    """bert-tensorflow 1.0.4's tokenization_test.py, assertion by assertion, on BertTokenizer."""

    def test_full_tokenizer(self):
        tokenizer = BertTokenizer(GOOGLE_TEST_VOCAB)
        tokens = _tokens(tokenizer, GOOGLE_TEST_TEXT)
        assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing", "[UNK]", "[UNK]", "[UNK]",
                          "[UNK]", "[UNK]", "[UNK]", "[UNK]", "[UNK]", "[UNK]"]
        assert [tokenizer.token_to_id(t) for t in tokens] == [7, 4, 5, 10, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0]

    def test_full_tokenizer_preserve_unused(self):
        tokenizer = BertTokenizer(GOOGLE_TEST_VOCAB, preserve_unused_tokens=True)
        tokens = _tokens(tokenizer, GOOGLE_TEST_TEXT)
        assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing", "[unused0]", "[UNK]",
                          "[UNK]", "[UNK]", "[UNK]", "[UNK]", "[UNK]"]
        ids = tokenizer(tf.constant([GOOGLE_TEST_TEXT])).to_list()
        assert ids == [[7, 4, 5, 10, 8, 9, 11, 0, 0, 0, 0, 0, 0]]

    def test_chinese(self):
        assert _basic_tokens("ah\u535A\u63A8zz") == ["ah", "\u535A", "\u63A8", "zz"]

    def test_basic_tokenizer_lower(self):
        assert _basic_tokens(" \tHeLLo!how  \n Are yoU?  ") == ["hello", "!", "how", "are", "you", "?"]
        assert _basic_tokens("H\u00E9llo") == ["hello"]

    def test_basic_tokenizer_no_lower(self):
        assert _basic_tokens(" \tHeLLo!how  \n Are yoU?  ", lower_case=False) == [
            "HeLLo", "!", "how", "Are", "yoU", "?"]

    def test_wordpiece_tokenizer(self):
        tokenizer = BertTokenizer(GOOGLE_TEST_VOCAB[:10] + ["[PAD]", "[MASK]"])
        assert _tokens(tokenizer, "") == []
        assert _tokens(tokenizer, "unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
        assert _tokens(tokenizer, "unwantedX running") == ["[UNK]", "runn", "##ing"]

    def test_convert_tokens_to_ids(self):
        tokenizer = BertTokenizer(GOOGLE_TEST_VOCAB[:10] + ["[PAD]", "[MASK]"])
        tokens = ["un", "##want", "##ed", "runn", "##ing"]
        assert [tokenizer.token_to_id(t) for t in tokens] == [7, 4, 5, 8, 9]

    # The character classes, observed through "a{char}b": whitespace splits and goes, a control character
    # goes without splitting, punctuation splits and stays.
    @pytest.mark.parametrize("char, expected", [
        (" ", True), ("\t", True), ("\r", True), ("\n", True), ("\u00A0", True), ("A", False), ("-", False)])
    def test_is_whitespace(self, char, expected):
        assert (_basic_tokens(f"a{char}b") == ["a", "b"]) == expected

    @pytest.mark.parametrize("char, expected", [
        ("\u0005", True), ("A", False), (" ", False), ("\t", False), ("\r", False), ("\U0001F4A9", False)])
    def test_is_control(self, char, expected):
        assert (_basic_tokens(f"a{char}b") == ["ab"]) == expected

    @pytest.mark.parametrize("char, expected", [
        ("-", True), ("$", True), ("`", True), (".", True), ("A", False), (" ", False)])
    def test_is_punctuation(self, char, expected):
        assert (_basic_tokens(f"a{char}b") == ["a", char, "b"]) == expected


@pytest.mark.slow
@pytest.mark.parametrize("lower_case", [True, False])
def test_preserve_unused_tokens_matches_the_original_flag(real_vocab_file, real_sentences,
                                                          original_tokenization, lower_case):
    texts = [
        "[unused0] [unused1] x[unused2] [unused3]. [UNUSED4] [unused993] [unused994] [unused01]",
        "\u3000[unused5]\u00a0中[unused6]文 [unused7]\u200b \x00[unused8] [unu\u200bsed9] [unused١]",
        "Keep [unused10] in: a sentence ([unused11]) [CLS] [MASK]",
        *[f"{a} [unused{i}] {b}" for i, (a, b) in enumerate(zip(real_sentences[:200],
                                                                real_sentences[200:400]))],
    ]
    with flagsaver.flagsaver(preserve_unused_tokens=True):
        reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=lower_case)
        expected = [reference.convert_tokens_to_ids(reference.tokenize(t)) for t in texts]
    assert expected[0][:2] == [1, 2]  # the flag is on: [unused0] and [unused1] stay whole
    tokenizer = BertTokenizer(real_vocab_file, lower_case=lower_case, max_chars_per_token=200,
                              preserve_unused_tokens=True)
    assert tokenizer(tf.constant(texts)).to_list() == expected
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts[:3]))
    assert ids.to_list() == expected[:3]
    first = texts[0].encode("utf-8")
    spans = zip(starts[0].numpy()[:2], ends[0].numpy()[:2])
    assert [first[s:e] for s, e in spans] == [b"[unused0]", b"[unused1]"]


@pytest.mark.slow
def test_special_tokens_in_strings_match_hugging_face(minilm_dir, real_vocab_file, real_sentences):
    from transformers import BertTokenizerFast

    texts = [
        "a[MASK]b [CLS] [mask] x[SEP]y [unused0] [UNK][PAD]", "[MASK][MASK]", "  [SEP]  ", "中[MASK]文",
        "Café [MASK] naïve", "[MA\u200bSK] [MASK\u200b] [[MASK]] [MASK", "",
        *[f"{a} [MASK] {b}[SEP]" for a, b in zip(real_sentences[:200], real_sentences[200:400])],
    ]
    expected = BertTokenizerFast.from_pretrained(minilm_dir)(texts, add_special_tokens=False)["input_ids"]
    tokenizer = BertTokenizer(real_vocab_file, special_tokens_in_strings=True)
    assert tokenizer(tf.constant(texts)).to_list() == expected
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    assert ids.to_list() == expected
    first = texts[0].encode("utf-8")
    assert [first[s:e].decode() for s, e in zip(starts[0].numpy(), ends[0].numpy())][:4] == [
        "a", "[MASK]", "b", "[CLS]"]
    # By default (as the original) they are text like any other.
    assert _tokens(BertTokenizer(real_vocab_file), "[MASK]") == ["[", "mask", "]"]


@pytest.mark.slow
@pytest.mark.parametrize("lower_case, strip_accents",
                         [(True, False), (False, True), (True, True), (False, False)])
def test_strip_accents_matches_hugging_face(real_vocab_file, real_sentences, edge_cases, lower_case,
                                            strip_accents):
    from tokenizers import BertWordPieceTokenizer

    # Where Hugging Face and the original differ (final sigma, private-use characters) is tested elsewhere.
    texts = real_sentences[:300] + [t for t in edge_cases if "Σ" not in t]
    texts.append("Ĺéçïñ ÀÉÎÕÜ ǅ ﬁ café\u0301")
    reference = BertWordPieceTokenizer(real_vocab_file, lowercase=lower_case, strip_accents=strip_accents)
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    tokenizer = BertTokenizer(real_vocab_file, lower_case=lower_case, strip_accents=strip_accents)
    assert tokenizer(tf.constant(texts)).to_list() == expected
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    assert ids.to_list() == expected
    if lower_case and not strip_accents:
        assert _tokens(tokenizer, "Café") == ["[UNK]"]  # "café" is not in the uncased vocabulary


def test_strip_accents_defaults_to_lower_case():
    vocab = GOOGLE_TEST_VOCAB + ["cafe", "café", "Cafe", "Café"]
    assert _tokens(BertTokenizer(vocab), "Café") == ["cafe"]
    assert _tokens(BertTokenizer(vocab, lower_case=False), "Café") == ["Café"]
    assert _tokens(BertTokenizer(vocab, strip_accents=False), "Café") == ["café"]
    assert _tokens(BertTokenizer(vocab, lower_case=False, strip_accents=True), "Café") == ["Cafe"]


def test_options_round_trip_through_config_and_old_configs_load():
    tokenizer = BertTokenizer(GOOGLE_TEST_VOCAB, strip_accents=False, special_tokens_in_strings=True,
                              preserve_unused_tokens=True)
    config = tokenizer.get_config()
    options = ("strip_accents", "special_tokens_in_strings", "preserve_unused_tokens")
    assert [config[k] for k in options] == [False, True, True]
    clone = BertTokenizer.from_config(config)
    text = tf.constant(["Wanted [unused0] [CLS]"])
    assert clone(text).to_list() == tokenizer(text).to_list() == [[3, 5, 11, 1]]
    # A configuration written before these options existed keeps today's behaviour.
    old = {k: v for k, v in config.items() if k not in options}
    restored = BertTokenizer.from_config(old)
    assert (restored.strip_accents, restored.special_tokens_in_strings, restored.preserve_unused_tokens) == (
        True, False, False)
    assert restored(text).to_list() == BertTokenizer(GOOGLE_TEST_VOCAB)(text).to_list()


@pytest.mark.slow
def test_where_google_and_hugging_face_differ_and_what_the_defaults_follow(minilm_dir, real_vocab_file,
                                                                           original_tokenization):
    """Each difference the README's table states, on the real uncased vocabulary."""
    from transformers import BertTokenizerFast

    google = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    hugging_face = BertTokenizerFast.from_pretrained(minilm_dir)
    ours = BertTokenizer(real_vocab_file)

    def tokens(text):
        return google.tokenize(text), hugging_face.tokenize(text), _tokens(ours, text)

    # Word length limit: 200 characters (Google) vs 100 (HF); ours 100, max_chars_per_token=200 for Google's.
    g, h, o = tokens("a" * 150)
    assert g[0] == "aaa" and h == o == ["[UNK]"]
    assert _tokens(BertTokenizer(real_vocab_file, max_chars_per_token=200), "a" * 150) == g
    # Capital sigma ending a word: Python's str.lower (Google) gives the final form, HF not; ours: Google.
    g, h, o = tokens("ΣΑΣ")
    assert g == o == ["σ", "##α", "##ς"] and h == ["σ", "##α", "##σ"]
    # Private-use characters: part of a word for Google, removed by HF; ours: Google.
    g, h, o = tokens("a\ue000b")
    assert g == o == ["[UNK]"] and h == ["ab"]
    # Special tokens written in text: text for Google, kept whole by HF; ours: Google, or HF's (option).
    g, h, o = tokens("a [MASK] b")
    assert g == o == ["a", "[", "mask", "]", "b"] and h == ["a", "[MASK]", "b"]
    assert _tokens(BertTokenizer(real_vocab_file, special_tokens_in_strings=True), "a [MASK] b") == h
    # [unusedN]: kept whole by Google's --preserve_unused_tokens (off by default), text for HF.
    g, h, o = tokens("a [unused0] b")
    assert g == h == o == ["a", "[", "unused", "##0", "]", "b"]
    with flagsaver.flagsaver(preserve_unused_tokens=True):
        g = google.tokenize("a [unused0] b")
    assert g == _tokens(BertTokenizer(real_vocab_file, preserve_unused_tokens=True), "a [unused0] b")
    assert g == ["a", "[unused0]", "b"]
    # Unicode tables: U+061D is punctuation since Unicode 14 (Python 3.11's database), unknown to HF's.
    g, h, o = tokens("a\u061db")
    assert g == o == ["a", "[UNK]", "b"] and h == ["[UNK]"]


@pytest.mark.parametrize("special_tokens_in_strings", [False, True])
def test_preserve_unused_tokens_leaves_other_rows_as_without_it(real_vocab_file, real_sentences,
                                                                special_tokens_in_strings):
    # Rows without "[unused" (after control characters are removed) skip the word-by-word split; their
    # ids and offsets must be those of the tokenizer without the option, in a batch mixing both kinds.
    texts = [*real_sentences[:40], "a [unu\x07sed3] b [CLS]", "", " \t ", "中文 [MASK] x", "[unused7]"]
    options = dict(lower_case=True, max_chars_per_token=200, special_tokens_in_strings=special_tokens_in_strings)
    plain = BertTokenizer(real_vocab_file, **options)
    preserving = BertTokenizer(real_vocab_file, preserve_unused_tokens=True, **options)
    got = [t.to_list() for t in preserving.tokenize_with_offsets(tf.constant(texts))]
    want = [t.to_list() for t in plain.tokenize_with_offsets(tf.constant(texts))]
    for row in [*range(40), 41, 42, 43]:
        assert [g[row] for g in got] == [w[row] for w in want], texts[row]
    assert got[0][40][1] == preserving.token_to_id("[unused3]")  # the control character is removed
    assert got[0][44] == [preserving.token_to_id("[unused7]")]
