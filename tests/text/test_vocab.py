"""build_vocab: a learned vocabulary that BertTokenizer loads and that covers real text."""

import unicodedata

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keras_bert_lite.text.tokenizer import BertTokenizer
from keras_bert_lite.text.vocab import SPECIAL_TOKENS, build_vocab, load_vocabulary


@pytest.mark.slow
def test_learned_vocab_loads_and_covers_held_out_text(tmp_path, real_sentences):
    train, held_out = real_sentences[:2000], real_sentences[3000:4000]
    path = tmp_path / "vocab.txt"
    vocab = build_vocab(train, vocab_size=500, output_file=str(path))

    assert vocab[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert 0.9 * 500 <= len(vocab) <= 500 and len(set(vocab)) == len(vocab)
    assert path.read_text(encoding="utf-8").splitlines() == vocab
    # Uncased: no upper-case letters, no accents, but whole words and ## pieces.
    assert not any(t.lower() != t for t in vocab[len(SPECIAL_TOKENS):])
    assert "the" in vocab and any(t.startswith("##") and len(t) > 3 for t in vocab)

    tokenizer = BertTokenizer(str(path))
    ids = tokenizer(tf.constant(held_out)).flat_values.numpy()
    assert ids.size > 10_000
    assert (ids == tokenizer.unk_id).mean() < 0.002
    # Learned multi-character pieces are used, not just single characters.
    piece_chars = [len(vocab[i].removeprefix("##")) for i in ids]
    assert sum(piece_chars) / len(piece_chars) > 1.7  # 1.0 with characters only


def test_dataset_corpus_and_custom_reserved_tokens():
    reserved = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]"]
    texts = ["The Café serves coffee.", "Coffee is served at the café!"] * 20
    vocab = build_vocab(tf.data.Dataset.from_tensor_slices(texts), vocab_size=200, reserved_tokens=reserved)
    assert vocab[:6] == reserved
    assert "cafe" in vocab and "Café" not in vocab
    cased = build_vocab(texts, vocab_size=200, lower_case=False)
    assert "Café" in cased and "The" in cased
    tokenizer = BertTokenizer(cased, lower_case=False)
    assert tokenizer.unk_id not in tokenizer(tf.constant(texts)).flat_values.numpy()


@pytest.mark.parametrize("corpus", [[], [""], ["   ", "\u3000\t"], "dataset"])
def test_empty_corpus_is_a_clear_error(corpus):
    if corpus == "dataset":
        corpus = tf.data.Dataset.from_tensor_slices(tf.constant([], tf.string))
    with pytest.raises(ValueError, match="The corpus is empty"):
        build_vocab(corpus, vocab_size=100)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="not a single string"):
        build_vocab("just one string", vocab_size=100)
    with pytest.raises(ValueError, match="leaves no room"):
        build_vocab(["some text"], vocab_size=5)
    with pytest.raises(ValueError, match="scalar tf.string elements"):
        build_vocab(tf.data.Dataset.from_tensor_slices([[1, 2]]), vocab_size=100)


@pytest.mark.parametrize("space", ["\u00a0", "\u3000", "\u2028", "\u2029", "\u2009"])
def test_any_whitespace_separates_words_and_the_file_loads(tmp_path, space):
    texts = [f"alpha{space}beta gamma{space}", f"{space}delta"] * 10
    path = tmp_path / "vocab.txt"
    vocab = build_vocab(texts, vocab_size=60, output_file=str(path))
    assert not [t for t in vocab if space in t]
    assert load_vocabulary(str(path)) == vocab
    tokenizer = BertTokenizer(str(path))
    assert [tokenizer.id_to_token(i) for i in tokenizer(tf.constant(texts[:2])).flat_values.numpy()] == [
        "alpha", "beta", "gamma", "delta"]


_SPACES = ["\u00a0", "\u3000", "\u2028", "\u2029", "\u1680", "\x85", "\x1c", "\x0b", "\t", "\n", " ", "\x00"]


@pytest.mark.slow
def test_learned_vocabularies_always_load_and_cover_their_corpus(tmp_path):
    # Any text yields a vocabulary that survives its file and loads into BertTokenizer, and every
    # character the learner kept tokenizes without [UNK].
    char = st.characters(codec="utf-8", exclude_categories=("Cn", "Cs"))
    line = st.lists(st.one_of(st.text(char, max_size=6), st.sampled_from(_SPACES)), max_size=8).map("".join)
    path = tmp_path / "vocab.txt"

    # 6% of the profile's examples (tests/conftest.py): 6 in the suite, 60 when thorough.
    @settings(max_examples=settings.default.max_examples * 6 // 100, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow])
    @given(st.lists(line, min_size=120, max_size=160), st.booleans())
    def check(corpus, lower_case):
        try:
            vocab = build_vocab(corpus, vocab_size=400, lower_case=lower_case, output_file=str(path))
        except ValueError as e:
            assert "The corpus is empty" in str(e)
            return
        assert load_vocabulary(str(path)) == vocab
        tokenizer = BertTokenizer(str(path), lower_case=lower_case)
        kept = {t for t in vocab if len(t) == 1}
        words = [c for c in "".join(corpus) if c in kept and unicodedata.category(c)[0] in "LN"]
        if words:
            assert tokenizer.unk_id not in tokenizer(tf.constant(words)).flat_values.numpy()
        tokenizer(tf.constant(corpus))

    check()


def test_a_corpus_too_small_for_vocab_size_is_logged(caplog):
    with caplog.at_level("WARNING"):
        vocab = build_vocab(["The cat sat on the mat.", "A dog sat too."], vocab_size=1000)
    assert len(vocab) < 950
    assert f"build_vocab: the corpus yields {len(vocab)} tokens, fewer than vocab_size=1000" in caplog.text
