"""tpu/transfer.py: the held-out source task (split by document, held-out text only) and the
pre-trained vs random-init comparison, on a one-layer model and a few synthetic documents."""

import importlib.util
import pathlib
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models import BertEncoder

SPEC = importlib.util.spec_from_file_location("transfer", pathlib.Path(__file__).parents[2] / "tpu" / "transfer.py")
transfer = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = transfer
SPEC.loader.exec_module(transfer)

WORDS = {"python": ["module", "object", "string", "file"], "numpy": ["array", "axis", "dtype", "shape"],
         "keras": ["layer", "model", "tensor", "weights"]}


def documents(count: int, offset: int = 0):
    """`count` documents per source, each three sentences of that source's words, numbered to be unique."""
    docs, sources = [], []
    for i in range(count):
        for source, words in WORDS.items():
            docs.append([f"the {words[(i + k) % 4]} and the {words[(i + k + 1) % 4]} {offset + 10 * i + k} ."
                         for k in range(3)])
            sources.append(source)
    return docs, sources


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "and", "."] + sorted(
        {w for words in WORDS.values() for w in words}) + [str(d) for d in range(10)] + [f"##{d}" for d in range(10)]
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("".join(t + "\n" for t in tokens))
    return str(path)


def test_source_task_splits_held_out_documents_by_document():
    heldout, sources = documents(12)
    training_text, _ = documents(5, offset=1000)  # what pre-training saw: must not reach the task
    task = transfer.source_task(heldout, sources)
    assert task.class_names == ("keras", "numpy", "python")
    splits = (task.train, task.validation, task.test)
    assert [len(y) for _, y in splits] == [3 * 6 * 3, 3 * 3 * 3, 3 * 3 * 3]  # 12 documents: 6 / 3 / 3 per class
    by_sentence = {s: (d, src) for d, src in zip(heldout, sources) for s in d}
    seen_documents = []
    for sentences, labels in splits:
        assert all(s in by_sentence for s in sentences)
        assert not {s for d in training_text for s in d} & set(sentences)
        assert [task.class_names[label] for label in labels] == [by_sentence[s][1] for s in sentences]
        seen_documents.append({id(by_sentence[s][0]) for s in sentences})
    assert not seen_documents[0] & seen_documents[2] and not seen_documents[1] & seen_documents[2]
    limited = transfer.source_task(heldout, sources, max_sentences=(10, 4, 4))
    assert [len(y) for _, y in (limited.train, limited.validation, limited.test)] == [10, 4, 4]


def test_source_task_rejects_bad_input():
    heldout, sources = documents(12)
    with pytest.raises(ValueError, match="36 documents but 35 sources"):
        transfer.source_task(heldout, sources[:-1])
    with pytest.raises(ValueError, match="fewer than two sources"):
        transfer.source_task(heldout, sources, min_class_documents=13)


def test_transfer_gain_compares_both_sides_on_the_test_split(vocab_file, tmp_path):
    heldout, sources = documents(12)
    task = transfer.source_task(heldout, sources)
    config = BertConfig.preset("tiny", vocab_size=36, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                               num_hidden_layers=1, max_position_embeddings=16)
    encoder = BertEncoder(config)
    before = [w.copy() for w in encoder.get_weights()]
    result = transfer.transfer_gain(encoder, vocab_file, task, seq_length=16, seeds=(1,),
                                    learning_rates=(1e-5, 1e-2), epochs=1)
    assert all(np.array_equal(a, b) for a, b in zip(before, encoder.get_weights()))  # fine-tuned copies only
    assert result["classes"] == ["keras", "numpy", "python"] and result["sentences"] == [54, 27, 27]
    for side in ("pretrained", "scratch"):
        assert 0 <= result[f"{side}_accuracy"] <= 1
        assert len(result["validation"][side]) == 2
        chosen = int(np.argmax(result["validation"][side]))
        assert result[f"{side}_learning_rate"] == (1e-5, 1e-2)[chosen]
    assert result["gain"] == pytest.approx(100 * (result["pretrained_accuracy"] - result["scratch_accuracy"]))
    assert result["majority_accuracy"] == pytest.approx(1 / 3)
    assert "gain" in transfer.format_result(result)
    transfer.write_summaries(str(tmp_path), result, step=7)
    events = [e for f in tmp_path.glob("events.*") for e in tf.compat.v1.train.summary_iterator(str(f))]
    tags = {v.tag: (e.step, tf.make_ndarray(v.tensor)) for e in events for v in e.summary.value}
    assert tags["transfer/gain_points"][0] == 7
    assert float(tags["transfer/gain_points"][1]) == pytest.approx(result["gain"], rel=1e-5)
