"""The main job's data: an honest held-out split, the shown-sentence rule, build and reuse."""

import dataclasses
import json
import pathlib
import re
import shutil
import sys

import main_job_data  # tpu/, on sys.path through conftest.py
import main_job_report
import pytest
import tensorflow as tf

from keras_bert_lite.data.corpora import builtin_documents, deduplicate_sentences
from keras_bert_lite.data.pretraining.format import pretraining_feature_spec
from keras_bert_lite.text.tokenizer import BertTokenizer


def _ngrams(sentence, n=main_job_data.CONTAMINATION_NGRAM):
    words = re.findall(r"\w+", sentence.lower())
    return {tuple(words[i: i + n]) for i in range(len(words) - n + 1)}


def test_split_holds_out_two_tenths_of_the_documents_and_drops_near_copies():
    """Every tenth document for the masked-LM evaluation, every tenth from the fifth on for the
    transfer tasks; no training sentence shares an 8-word run with either."""
    documents, sources = main_job_data.corpus_documents(())
    assert documents == deduplicate_sentences(builtin_documents()) and len(sources) == len(documents)
    # Help topics, then modules of the standard library, by name.
    assert sources[0].startswith("help:") and "email.message" in sources
    assert all(s.startswith("help:") or s.split(".")[0] in sys.stdlib_module_names for s in sources)
    documents = documents[:200]
    # A near-copy of a held-out sentence (one word changed) inside a training document; and of a
    # sentence kept out for the tasks.
    near_copies = []
    for kept_out in (10, 15):
        words = next(s for s in documents[kept_out] if len(s.split()) > 12).split()
        near_copies.append(" ".join(words[:-1] + ["differently."]))
        documents[kept_out + 1] = [*documents[kept_out + 1], near_copies[-1]]
    train, heldout, kept_out, dropped = main_job_data.split_heldout(documents)
    assert heldout == documents[::10]
    assert kept_out == sorted(list(range(0, 200, 10)) + list(range(5, 200, 10)))
    train_sentences = {s for d in train for s in d}
    assert not train_sentences & set(near_copies) and dropped >= 2
    assert not train_sentences & {s for i in kept_out for s in documents[i]}
    kept_out_ngrams = {g for i in kept_out for s in documents[i] for g in _ngrams(s)}
    assert not [s for s in train_sentences if _ngrams(s) & kept_out_ngrams]
    kept = sum(len(d) for d in train)
    assert kept + dropped >= sum(len(d) for i, d in enumerate(documents) if i % 5) - 2 * len(documents)
    assert dropped < 0.05 * kept  # near-copies are rare once sentences are deduplicated
    with pytest.raises(ValueError, match="every must be >= 2"):
        main_job_data.split_heldout(documents, every=1)


def test_shown_sentences_follow_the_fixed_rule():
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ",", ".", "the", "model", "reads",
                               "every", "word", "once", "here", "code", "in", "order", "and", "again"])
    heldout = [
        ["x = f(y) is not plain text at all, is it?", "The model reads every word once here, in order."],
        ["Short one here."],
        ["The code reads every word once here and here.", "The model reads every word once, again here."],
    ]
    chosen = main_job_data.shown_sentences(heldout, 2, tokenizer, seq_length=64)
    # Documents 0 and 1 start the two searches; document 1 has no sentence of 8+ plain words, so
    # the second search moves on to document 2. The middle one of the one-token words is masked.
    assert chosen == [("The model reads every word once here, in order.", 4),
                      ("The code reads every word once here and here.", 4)]
    assert [s.split()[i] for s, i in chosen] == ["word", "word"]
    # Words that are not one vocabulary token ("it") are passed over; short words count.
    short = main_job_data.shown_sentences([["The model reads it, the code in order and here again."]], 1,
                                          tokenizer, seq_length=64)
    assert short == [("The model reads it, the code in order and here again.", 6)]
    assert main_job_data.shown_sentences(heldout, 0, tokenizer, 64) == []
    # A word that would be cut off by the sequence length is not chosen: the next candidate is.
    assert main_job_data.shown_sentences(heldout, 1, tokenizer, seq_length=6) == []
    assert main_job_data.masked_word_position(tokenizer, "The model reads, every word.", 3) == 5


@pytest.mark.slow
def test_build_writes_everything_and_reuses_it(demo_data, tmp_path):
    settings, data = demo_data
    root = pathlib.Path(data.vocab_file).parent
    assert data.vocab_file == str(root / "vocab.txt") and len(data.shown_sentences) == 3
    assert data.corpus["documents"] == 60 and data.corpus["heldout_documents"] == 6
    assert data.corpus["task_documents"] == 6
    files = sorted(p.name for p in (root / "data").iterdir())
    assert files == ["heldout.tfrecord", "manifest.json", "task_documents.json"] + [
        f"train-{i}.tfrecord" for i in range(4)]
    documents, sources = main_job_data.read_task_documents(data.task_documents_file)
    everything, all_sources = main_job_data.corpus_documents(())
    assert documents == [everything[i] for i in range(60) if i % 5 == 0]
    assert sources == [all_sources[i] for i in range(60) if i % 5 == 0]
    manifest = json.loads((root / "data" / "manifest.json").read_text())
    assert manifest["settings"]["vocab_size"] == 300 and manifest["corpus"] == data.corpus
    stamps = {p.name: p.stat().st_mtime_ns for p in (root / "data").iterdir()}
    assert main_job_data.build_demo_data(str(root), settings) == data  # reused, not rebuilt
    assert stamps == {p.name: p.stat().st_mtime_ns for p in (root / "data").iterdir()}
    # Other settings rebuild, unless checkpoints were trained on the old data (in a copy: the data is shared).
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    (copy / "checkpoints").mkdir()
    with pytest.raises(ValueError, match="has checkpoints but its data was made with other settings"):
        main_job_data.build_demo_data(str(copy), dataclasses.replace(settings, dupe_factor=2))
    # A manifest written before a setting existed had that setting's default: still reused.
    older = json.loads((copy / "data" / "manifest.json").read_text())
    del older["settings"]["whole_word_masking"]
    (copy / "data" / "manifest.json").write_text(json.dumps(older))
    assert main_job_data.build_demo_data(str(copy), settings) == dataclasses.replace(
        data, **{name: getattr(data, name).replace(str(root), str(copy))
                 for name in ("vocab_file", "train_files", "heldout_files", "task_documents_file")})
    with pytest.raises(ValueError, match="has checkpoints but its data was made with other settings"):
        main_job_data.build_demo_data(str(copy), dataclasses.replace(settings, whole_word_masking=True))
    assert not [p for folder in (root, copy) for p in folder.rglob("*") if "partial" in p.name]


def _masked_per_example(files: str, settings) -> float:
    masked, examples = main_job_report.label_counts(files, settings.max_seq_length, settings.max_predictions_per_seq)
    return masked.sum() / examples.sum()


def test_masked_lm_prob_sets_how_many_training_tokens_are_masked_and_leaves_the_heldout_data_alone(
        demo_data, tmp_path):
    """--masked_lm_prob reaches the training data's writer: 0.05 of 32 tokens masks round(1.6) = 2
    positions per example (1 in the rare shorter ones), the default 0.15 round(4.8) = 5
    (max_predictions_per_seq). The held-out data is masked at BERT's 0.15 either way: the same file."""
    settings, data = demo_data
    sparse = main_job_data.build_demo_data(str(tmp_path), dataclasses.replace(
        settings, masked_lm_prob=0.05, vocab_file=data.vocab_file), progress=False)
    default, fewer = (_masked_per_example(d.train_files, settings) for d in (data, sparse))
    assert 4.9 < default <= 5 and 1.9 < fewer <= 2, (default, fewer)
    assert _masked_per_example(data.heldout_files, settings) > 4.9
    assert pathlib.Path(sparse.heldout_files).read_bytes() == pathlib.Path(data.heldout_files).read_bytes()


def _pieces_without_their_word(files: str, settings, vocab_file: str) -> tuple[int, int]:
    """(masked "##" pieces whose word's previous piece is not masked, masked pieces) in `files`. A
    piece right after [CLS] or [SEP] starts its segment: truncation cut its word's start."""
    vocabulary = pathlib.Path(vocab_file).read_text().splitlines()
    spec = pretraining_feature_spec(settings.max_seq_length, settings.max_predictions_per_seq)
    split, masked = 0, 0
    for record in tf.data.TFRecordDataset(sorted(tf.io.gfile.glob(files))):
        example = tf.io.parse_single_example(record, spec)
        weights = example["masked_lm_weights"].numpy() > 0
        positions = example["masked_lm_positions"].numpy()[weights]
        labels = example["masked_lm_ids"].numpy()[weights]
        before = [vocabulary[i] for i in example["input_ids"].numpy()[positions - 1]]
        chosen = set(positions.tolist())
        masked += len(positions)
        split += sum(vocabulary[label].startswith("##") and position - 1 not in chosen and token not in ("[CLS]", "[SEP]")
                     for position, label, token in zip(positions, labels, before))
    return split, masked


def test_whole_word_masking_masks_every_piece_of_a_word_in_the_training_data_only(demo_data, tmp_path):
    """--do_whole_word_mask reaches the training data's writer: no masked "##" piece without the piece
    before it (token masking splits words on the same data); the held-out data is the same file."""
    settings, data = demo_data
    whole = main_job_data.build_demo_data(str(tmp_path), dataclasses.replace(
        settings, whole_word_masking=True, vocab_file=data.vocab_file), progress=False)
    split, masked = _pieces_without_their_word(whole.train_files, settings, data.vocab_file)
    assert split == 0 and masked > 1000, (split, masked)
    split, masked = _pieces_without_their_word(data.train_files, settings, data.vocab_file)
    assert split > 10, (split, masked)
    assert pathlib.Path(whole.heldout_files).read_bytes() == pathlib.Path(data.heldout_files).read_bytes()
