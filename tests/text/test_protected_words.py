"""ProtectedWords: parts kept whole (special tokens anywhere, [unusedN] words) and their source spans."""

import tensorflow as tf

from keras_bert_lite.text.protected_words import ProtectedWords

IDS = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "[unused0]": 5, "[unused12]": 6}


def _split(words, texts):
    parts, starts, ends, ids = words.split(tf.constant(texts))
    flat_ids = iter(ids.numpy().tolist())
    return [[(p.decode(), s, e, next(flat_ids)) for p, s, e in zip(*row)]
            for row in zip(parts.to_list(), starts.to_list(), ends.to_list())]


def test_special_tokens_are_split_off_anywhere():
    words = ProtectedWords(IDS, special_tokens=True, unused_tokens=False)
    assert words.enabled
    assert _split(words, ["a[MASK]b [mask] [CLS]"]) == [
        [("a", 0, 1, -1), ("[MASK]", 1, 7, 4), ("b [mask] ", 7, 16, -1), ("[CLS]", 16, 21, 2)]]


def test_unused_tokens_are_whole_words_only_and_text_after_a_nul_is_kept():
    words = ProtectedWords(IDS, special_tokens=False, unused_tokens=True)
    got = _split(words, ["[unused0] x[unused0] [unused12]\u200b \x00[unused7] 中[unused0]"])[0]
    assert [(p, i) for p, _, _, i in got] == [
        ("[unused0]", 5), ("x[unused0]", -1), ("[unused12]\u200b", 6), ("\x01[unused7]", -1),
        ("中", -1), ("[unused0]", 5)]
    assert not ProtectedWords(IDS, special_tokens=False, unused_tokens=False).enabled
