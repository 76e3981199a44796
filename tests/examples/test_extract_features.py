"""extract_features: each line packed as a single text or a pair, as the original extract_features.py does."""

import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEQ_LENGTH = 24
LINES = [
    "The cat sat on the mat.",
    "Who sat on the mat? ||| The cat sat.",
    "",
    "a|||b needs spaces around the bars",
    "x ||| y ||| the last bars split",
    "||| leading bars",
    "Café naïve résumé ||| 東京 and Zürich",
    "a very long first text " * 6 + "||| short",
]


@pytest.fixture(scope="module")
def example(scripts):
    """examples/extract_features.py as a module, loaded as the in-process script runs load it (its
    flags recorded, so that the next script loaded drops them)."""
    return scripts.load_script(ROOT / "examples" / "extract_features.py")


def test_lines_are_packed_one_by_one_like_the_original(example, import_original_bert, real_vocab_file, tmp_path):
    from keras_bert_lite.text.preprocessor import BertPreprocessor

    path = tmp_path / "texts.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    original = import_original_bert("extract_features")
    tokenization = import_original_bert("tokenization")
    reference_examples = original.read_examples(str(path))
    texts = example.read_texts(str(path))
    assert texts == [(e.text_a, e.text_b) for e in reference_examples]
    assert texts[0][1] is None and texts[1] == ("Who sat on the mat?", "The cat sat.")
    tokenizer = tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    reference = original.convert_examples_to_features(reference_examples, SEQ_LENGTH, tokenizer)
    packed = example.pack_texts(BertPreprocessor(real_vocab_file, seq_length=SEQ_LENGTH, lower_case=True), texts)
    for ours, theirs in [("input_word_ids", "input_ids"), ("input_mask", "input_mask"), ("input_type_ids", "input_type_ids")]:
        np.testing.assert_array_equal(packed[ours], [getattr(f, theirs) for f in reference], err_msg=ours)


def test_bad_files(example, tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n")
    with pytest.raises(ValueError, match=r"blank\.txt: no text lines"):
        example.read_texts(str(blank))
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"fine\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"latin1\.txt, line 2: not valid UTF-8"):
        example.read_texts(str(latin1))
