"""SQuAD windows, labels and answer selection checked against the original BERT `run_squad.py`
(bert-tensorflow 1.0.4): its `convert_examples_to_features` and `write_predictions`."""

import collections
import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.squad import (
    SquadExample,
    predict_answers,
    read_squad,
    squad_dataset,
    squad_features,
    tokenize_with_offsets,
)

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "squad"
WINDOW = dict(max_seq_length=48, doc_stride=16, max_query_length=16)


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


def _original_features(original, reference_tokenizer, path, is_training, version_2=False):
    from absl import flags

    flags.FLAGS.version_2_with_negative = version_2
    try:
        examples = original.read_squad_examples(str(path), is_training=is_training)
        features = []
        original.convert_examples_to_features(
            examples, reference_tokenizer, is_training=is_training, output_fn=features.append, **WINDOW
        )
    finally:
        flags.FLAGS.version_2_with_negative = False
    return examples, features


@pytest.mark.parametrize("name, is_training, version_2", [
    ("train-v1.1.json", True, False), ("dev-v1.1.json", False, False), ("v2.0.json", True, True),
])
def test_windows_match_the_original_run_squad(original, tokenizer, reference_tokenizer, name, is_training, version_2):
    path = FIXTURES / name
    _, reference = _original_features(original, reference_tokenizer, path, is_training, version_2)
    ours = squad_features(read_squad(path, is_training=is_training), tokenizer, **WINDOW)
    assert len(ours) == len(reference) > len({f.example_index for f in reference})  # contexts were split
    for n, feature in enumerate(reference):
        assert ours.input_word_ids[n].tolist() == feature.input_ids
        assert ours.input_mask[n].tolist() == feature.input_mask
        assert ours.input_type_ids[n].tolist() == feature.segment_ids
        assert ours.example_index[n] == feature.example_index
        max_context = [feature.token_is_max_context.get(i, False) for i in range(WINDOW["max_seq_length"])]
        assert ours.max_context[n].tolist() == max_context
        if is_training:
            assert (ours.start_positions[n], ours.end_positions[n]) == (feature.start_position, feature.end_position)


def test_labelled_tokens_cover_the_answer(tokenizer):
    examples = read_squad(FIXTURES / "train-v1.1.json", is_training=True)
    features = squad_features(examples, tokenizer, **WINDOW)
    found = collections.Counter()
    for n in range(len(features)):
        start, end = features.start_positions[n], features.end_positions[n]
        if start == 0:
            continue
        example = examples[features.example_index[n]]
        context = example.context.encode("utf-8")
        text = context[features.token_starts[n, start]:features.token_ends[n, end]].decode("utf-8")
        assert text == example.answers[0]
        found[example.qas_id] += 1
    assert set(found) == {e.qas_id for e in examples}


def test_tokenize_with_offsets_keeps_ids_and_maps_to_original_words(tokenizer):
    texts = ["Héllo wörld, U.S. café's (1895).", "日本 text", "", "  unaffable\tthings "]
    ids, starts, ends = tokenize_with_offsets(tokenizer, tf.constant(texts))
    assert ids.to_list() == tokenizer(tf.constant(texts)).to_list()
    words = [
        [text.encode()[s:e].decode() for s, e in zip(row_starts, row_ends)]
        for text, row_starts, row_ends in zip(texts, starts.to_list(), ends.to_list())
    ]
    assert words[0] == ["Héllo", "wörld", ",", "U", ".", "S", ".", "café", "'", "s", "(", "1895", ")", "."]
    assert words[1] == ["日", "本", "text"] and words[2] == []
    assert words[3][0] == words[3][1] == "unaffable" and words[3][-1] == "things"


def _word_aligned_logits(features, tokenizer, seed):
    """Random logits where spans may only start at a word's first piece and end at its last."""
    rng = np.random.default_rng(seed)
    start = rng.normal(size=features.input_word_ids.shape).astype("float32")
    end = rng.normal(size=features.input_word_ids.shape).astype("float32")
    continuation = np.vectorize(lambda i: tokenizer.id_to_token(i).startswith("##"))(features.input_word_ids)
    start[continuation] = -1e4
    end[:, :-1][continuation[:, 1:]] = -1e4
    return start, end


@pytest.mark.parametrize("name, version_2", [("dev-v1.1.json", False), ("v2.0.json", True)])
def test_answers_match_the_original_write_predictions(
    original, tokenizer, reference_tokenizer, tmp_path, name, version_2
):
    from absl import flags

    path = FIXTURES / name
    reference_examples, reference_features = _original_features(
        original, reference_tokenizer, path, False, version_2
    )
    examples = read_squad(path, is_training=False)
    features = squad_features(examples, tokenizer, **WINDOW)
    for seed in range(5):
        start, end = _word_aligned_logits(features, tokenizer, seed)
        results = [original.RawResult(f.unique_id, start[n].tolist(), end[n].tolist())
                   for n, f in enumerate(reference_features)]
        files = [str(tmp_path / f) for f in ("p.json", "n.json", "o.json")]
        flags.FLAGS.version_2_with_negative = version_2
        flags.FLAGS.verbose_logging = False
        try:
            original.write_predictions(reference_examples, reference_features, results, 20, 30, True, *files)
        finally:
            flags.FLAGS.version_2_with_negative = False
        reference = json.loads(pathlib.Path(files[0]).read_text())
        ours = predict_answers(examples, features, start, end, version_2_with_negative=version_2)
        assert ours.answers == reference
        reference_nbest = json.loads(pathlib.Path(files[1]).read_text())
        for qas_id, entries in ours.nbest.items():
            assert entries[0]["probability"] == pytest.approx(reference_nbest[qas_id][0]["probability"], rel=1e-4)
        if version_2:
            reference_odds = json.loads(pathlib.Path(files[2]).read_text())
            assert ours.null_odds == pytest.approx(reference_odds, rel=1e-4, abs=1e-4)


def test_span_rules_start_before_end_and_max_answer_length(tokenizer):
    context = "alpha beta gamma delta epsilon zeta eta theta"
    example = SquadExample("q", "which?", context, ["gamma"], context.index("gamma"))
    features = squad_features([example], tokenizer, max_seq_length=24, doc_stride=8, max_query_length=8)
    start = np.full(features.input_word_ids.shape, -5.0, "float32")
    end = np.full_like(start, -5.0)
    offset = 1 + 2 + 1  # [CLS] which ? [SEP]
    start[0, offset + 5], end[0, offset + 1] = 10.0, 10.0  # the best pair, but it ends before it starts
    end[0, offset + 7], end[0, offset + 6] = 3.0, 1.0
    answers = predict_answers([example], features, start, end).answers
    assert answers["q"] == "zeta eta theta"  # tokens 5..7, score 13
    short = predict_answers([example], features, start, end, max_answer_length=2).answers
    assert short["q"] == "zeta eta"  # tokens 5..6, score 11


def test_dataset_batches_inputs_and_labels(tokenizer):
    features = squad_features(read_squad(FIXTURES / "train-v1.1.json", True), tokenizer, **WINDOW)
    inputs, labels = next(iter(squad_dataset(features, batch_size=4, is_training=False)))
    np.testing.assert_array_equal(inputs["input_word_ids"], features.input_word_ids[:4])
    np.testing.assert_array_equal(labels["start_positions"], features.start_positions[:4])


