"""SQuAD windows, labels and answer selection checked against the original BERT `run_squad.py`
(bert-tensorflow 1.0.4): its `convert_examples_to_features` and `write_predictions`, on the
fixtures and on generated documents (long contexts, long questions, accents, punctuation, CJK)
under three window layouts."""

import json
import pathlib

import numpy as np
import pytest

from keras_bert_lite.data.squad import predict_answers, read_squad, squad_features

pytestmark = pytest.mark.slow

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "squad"
WINDOW = dict(max_seq_length=48, doc_stride=16, max_query_length=16)
LAYOUTS = {
    "overlapping": WINDOW,
    "stride 7": dict(max_seq_length=40, doc_stride=7, max_query_length=10),
    "stride beyond the window": dict(max_seq_length=32, doc_stride=100, max_query_length=8),
}
# Whitespace words with BERT words inside them (punctuation, CJK), accents and word pieces; each
# part of a word is distinct, so the original's text search (`get_final_text`) is unambiguous.
WORDS = (
    "the river flows through central Europe from Black Forest into sea its basin covers about "
    "square kilometres reaches nineteen countries unaffable Zürich café naïve résumé 1895 "
    "second-longest U.S. (1895). Dubois's 日本語 e-mail 70,000 «quoted» Warsaw; physicist"
).split()


@pytest.fixture(scope="module")
def original(import_original_bert):
    return import_original_bert("run_squad")


@pytest.fixture(scope="module")
def tokenizer(real_vocab_file):
    from keras_bert_lite.text.tokenizer import BertTokenizer

    return BertTokenizer(real_vocab_file)


@pytest.fixture(scope="module")
def reference_tokenizer(real_vocab_file):
    from bert import tokenization

    return tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)


def generated_document(seed: int, num_paragraphs: int = 40, version_2: bool = False) -> dict:
    """Random paragraphs of `WORDS` (5-150 words) with 1-3 questions each (1-30 words, so some are
    cut at max_query_length); answers are runs of 1-4 whole words; a quarter unanswerable in v2."""
    rng = np.random.default_rng(seed)
    paragraphs = []
    for p in range(num_paragraphs):
        words = list(rng.choice(WORDS, size=int(rng.integers(5, 150))))
        context = " ".join(words)
        offsets = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
        qas = []
        for q in range(int(rng.integers(1, 4))):
            first = int(rng.integers(0, len(words)))
            text = " ".join(words[first : first + int(rng.integers(1, 5))])
            qa = {"id": f"p{p}q{q}", "question": " ".join(rng.choice(WORDS, size=int(rng.integers(1, 30)))) + "?",
                  "answers": [{"text": text, "answer_start": int(offsets[first])}]}
            if version_2:
                qa["is_impossible"] = bool(rng.random() < 0.25)
                if qa["is_impossible"]:
                    qa["answers"] = []
            qas.append(qa)
        paragraphs.append({"context": context, "qas": qas})
    return {"version": "v2.0" if version_2 else "1.1", "data": [{"title": "generated", "paragraphs": paragraphs}]}


def _original_features(original, reference_tokenizer, path, is_training, version_2=False, window=WINDOW):
    from absl import flags

    flags.FLAGS.version_2_with_negative = version_2
    try:
        examples = original.read_squad_examples(str(path), is_training=is_training)
        features = []
        original.convert_examples_to_features(
            examples, reference_tokenizer, is_training=is_training, output_fn=features.append, **window
        )
    finally:
        flags.FLAGS.version_2_with_negative = False
    return examples, features


def _assert_same_windows(ours, reference, seq_length, is_training):
    assert len(ours) == len(reference)
    for n, feature in enumerate(reference):
        assert ours.input_word_ids[n].tolist() == feature.input_ids
        assert ours.input_mask[n].tolist() == feature.input_mask
        assert ours.input_type_ids[n].tolist() == feature.segment_ids
        assert ours.example_index[n] == feature.example_index
        max_context = [feature.token_is_max_context.get(i, False) for i in range(seq_length)]
        assert ours.max_context[n].tolist() == max_context
        if is_training:
            assert (ours.start_positions[n], ours.end_positions[n]) == (feature.start_position, feature.end_position)


@pytest.mark.parametrize("name, is_training, version_2", [
    ("train-v1.1.json", True, False), ("dev-v1.1.json", False, False), ("v2.0.json", True, True),
])
def test_fixture_windows_match_the_original(original, tokenizer, reference_tokenizer, name, is_training, version_2):
    path = FIXTURES / name
    _, reference = _original_features(original, reference_tokenizer, path, is_training, version_2)
    ours = squad_features(read_squad(path, is_training=is_training), tokenizer, **WINDOW)
    assert len(reference) > len({f.example_index for f in reference})  # contexts were split
    _assert_same_windows(ours, reference, WINDOW["max_seq_length"], is_training)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_generated_windows_and_labels_match_the_original(original, tokenizer, reference_tokenizer, tmp_path, layout):
    window = LAYOUTS[layout]
    path = tmp_path / "train.json"
    path.write_text(json.dumps(generated_document(seed=len(layout), version_2=True)))
    _, reference = _original_features(original, reference_tokenizer, path, True, True, window)
    ours = squad_features(read_squad(path, is_training=True), tokenizer, batch_size=16, **window)
    windows = np.bincount(ours.example_index)
    assert windows.max() >= 4 and (windows == 1).any()  # long and short contexts
    assert (ours.start_positions > 0).sum() > 20 and (ours.start_positions == 0).sum() > 20
    _assert_same_windows(ours, reference, window["max_seq_length"], is_training=True)


def _word_aligned_logits(features, tokenizer, seed):
    """Random logits where spans may only start at a word's first piece and end at its last.

    The original maps a span starting or ending inside a word back to part of that word; ours
    answers with whole words, so the comparison keeps to spans of whole words. A window's last
    context token may be cut from the rest of its word (in the next window): no span ends there.
    """
    rng = np.random.default_rng(seed)
    start = rng.normal(size=features.input_word_ids.shape).astype("float32")
    end = rng.normal(size=features.input_word_ids.shape).astype("float32")
    continuation = np.vectorize(lambda i: tokenizer.id_to_token(i).startswith("##"))(features.input_word_ids)
    start[continuation] = -1e4
    end[:, :-1][continuation[:, 1:]] = -1e4
    last_context_token = (features.token_starts >= 0).cumsum(axis=1).argmax(axis=1)
    end[np.arange(len(end)), last_context_token] = -1e4
    return start, end


def _assert_same_predictions(original, examples, features, reference_examples, reference_features, start, end,
                             version_2, tmp_path, n_best_size=20, max_answer_length=30):
    from absl import flags

    results = [original.RawResult(f.unique_id, start[n].tolist(), end[n].tolist())
               for n, f in enumerate(reference_features)]
    files = [str(tmp_path / f) for f in ("p.json", "n.json", "o.json")]
    flags.FLAGS.version_2_with_negative = version_2
    flags.FLAGS.verbose_logging = False
    try:
        original.write_predictions(reference_examples, reference_features, results, n_best_size, max_answer_length,
                                   True, *files)
    finally:
        flags.FLAGS.version_2_with_negative = False
    ours = predict_answers(examples, features, start, end, n_best_size=n_best_size,
                           max_answer_length=max_answer_length, version_2_with_negative=version_2)
    # Without any valid span the original answers its placeholder text "empty"; we answer "".
    reference = {k: "" if v == "empty" else v for k, v in json.loads(pathlib.Path(files[0]).read_text()).items()}
    assert ours.answers == reference
    reference_nbest = json.loads(pathlib.Path(files[1]).read_text())
    for qas_id, entries in ours.nbest.items():
        assert [e["text"] for e in entries] == [e["text"].replace("empty", "") for e in reference_nbest[qas_id]]
        # Probabilities and logits pass through JSON floats; 1e-6 relative covers their printing.
        for ours_entry, reference_entry in zip(entries, reference_nbest[qas_id]):
            for key in ("probability", "start_logit", "end_logit"):
                assert ours_entry[key] == pytest.approx(reference_entry[key], rel=1e-6, abs=1e-9)
    if version_2:
        reference_odds = json.loads(pathlib.Path(files[2]).read_text())
        assert ours.null_odds == pytest.approx(reference_odds, rel=1e-6, abs=1e-6)
    return ours


@pytest.mark.parametrize("name, version_2", [("dev-v1.1.json", False), ("v2.0.json", True)])
def test_fixture_answers_match_the_original(original, tokenizer, reference_tokenizer, tmp_path, name, version_2):
    path = FIXTURES / name
    reference_examples, reference_features = _original_features(original, reference_tokenizer, path, False, version_2)
    examples = read_squad(path, is_training=False)
    features = squad_features(examples, tokenizer, **WINDOW)
    for seed in range(5):
        start, end = _word_aligned_logits(features, tokenizer, seed)
        _assert_same_predictions(original, examples, features, reference_examples, reference_features, start, end,
                                 version_2, tmp_path)


@pytest.mark.parametrize("version_2", [False, True])
def test_generated_answers_match_the_original(original, tokenizer, reference_tokenizer, tmp_path, version_2):
    """Many windows per example, candidates in several windows, a short n-best and answer limit."""
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(generated_document(seed=10 + version_2, version_2=version_2)))
    window = LAYOUTS["stride 7"]
    reference_examples, reference_features = _original_features(
        original, reference_tokenizer, path, False, version_2, window
    )
    examples = read_squad(path, is_training=False)
    features = squad_features(examples, tokenizer, **window)
    # The original fails on a SQuAD 2.0 question without any valid span: a short list there only for v1.1.
    for seed, (n_best_size, max_answer_length) in enumerate([(20, 30), (10, 10) if version_2 else (5, 3)]):
        start, end = _word_aligned_logits(features, tokenizer, seed)
        if version_2:  # a higher [CLS] score, so that "no answer" wins some questions
            start[:, 0] += 1.5
            end[:, 0] += 1.5
        ours = _assert_same_predictions(original, examples, features, reference_examples, reference_features,
                                        start, end, version_2, tmp_path, n_best_size, max_answer_length)
        if version_2:
            assert "" in ours.answers.values() and set(ours.answers.values()) != {""}
