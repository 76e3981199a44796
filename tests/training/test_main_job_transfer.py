"""tpu/main_job_transfer.py: the held-out "same document?" task (split by document, held-out text
only) and the pre-trained vs random-init comparison, on a one-layer model and synthetic documents."""

import main_job_transfer as transfer
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models import BertEncoder

WORDS = ["module", "object", "string", "file", "array", "axis", "layer", "model"]


def documents(count: int, offset: int = 0) -> list[list[str]]:
    """`count` documents of three sentences each, every sentence unique (numbered)."""
    return [[f"the {WORDS[(i + k) % 8]} and the {WORDS[(i + k + 1) % 8]} {offset + 10 * i + k} ." for k in range(3)]
            for i in range(count)]


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "and", "."] + WORDS + [
        str(d) for d in range(10)] + [f"##{d}" for d in range(10)]
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("".join(t + "\n" for t in tokens))
    return str(path)


def test_same_document_task_pairs_held_out_sentences_split_by_document():
    heldout = documents(16) + [["a lone sentence ."]]
    training_text = documents(5, offset=1000)  # what pre-training saw: must not reach the task
    task = transfer.same_document_task(heldout, num_pairs=(200, 60, 60), seed=3)
    document_of = {s: i for i, d in enumerate(heldout) for s in d}
    used = []
    for first, second, labels in (task.train, task.validation, task.test):
        assert len(first) == len(second) == len(labels) and labels.dtype == np.int32
        assert labels.mean() == 0.5  # balanced: pair k is labelled k % 2
        assert not {s for d in training_text for s in d} & (set(first) | set(second))
        assert "a lone sentence ." not in set(first) | set(second)  # one-sentence documents have no pair
        for a, b, label in zip(first, second, labels):
            assert a != b and (document_of[a] == document_of[b]) == bool(label)
        used.append({document_of[s] for s in first + second})
    assert [len(documents) for documents in used] == [8, 4, 4]  # 16 usable: 8 train, 4 validation, 4 test
    assert not used[0] & used[2] and not used[1] & used[2] and not used[0] & used[1]
    again = transfer.same_document_task(heldout, num_pairs=(200, 60, 60), seed=3)
    assert again.test[0] == task.test[0] and again.test[1] == task.test[1]


def test_same_document_task_needs_two_documents_per_split():
    with pytest.raises(ValueError, match="7 held-out documents have two sentences or more; 8 are needed"):
        transfer.same_document_task(documents(7) + [["one ."]] * 5)


@pytest.mark.slow
def test_transfer_gain_compares_both_sides_on_the_test_split(vocab_file, tmp_path):
    task = transfer.same_document_task(documents(16), num_pairs=(64, 32, 32))
    config = BertConfig.preset("tiny", vocab_size=36, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                               num_hidden_layers=1, max_position_embeddings=24)
    encoder = BertEncoder(config)
    before = [w.copy() for w in encoder.get_weights()]
    result = transfer.transfer_gain(encoder, vocab_file, task, seq_length=24, seeds=(1,),
                                    learning_rates=(1e-5, 1e-2), epochs=1)
    assert all(np.array_equal(a, b) for a, b in zip(before, encoder.get_weights()))  # fine-tuned copies only
    assert result["pairs"] == [64, 32, 32]
    for side in ("pretrained", "scratch"):
        assert 0 <= result[f"{side}_accuracy"] <= 1
        assert len(result["validation"][side]) == 2
        chosen = int(np.argmax(result["validation"][side]))
        assert result[f"{side}_learning_rate"] == (1e-5, 1e-2)[chosen]
    assert result["gain"] == pytest.approx(100 * (result["pretrained_accuracy"] - result["scratch_accuracy"]))
    assert result["majority_accuracy"] == pytest.approx(0.5)
    printed = transfer.format_result(result)
    assert "same document" in printed and f"gain {result['gain']:+.1f} points" in printed
    transfer.write_summaries(str(tmp_path), result, step=7)
    events = [e for f in tmp_path.glob("events.*") for e in tf.compat.v1.train.summary_iterator(str(f))]
    tags = {v.tag: (e.step, tf.make_ndarray(v.tensor)) for e in events for v in e.summary.value}
    assert tags["transfer/gain_points"][0] == 7
    assert float(tags["transfer/gain_points"][1]) == pytest.approx(result["gain"], rel=1e-5)
    assert float(tags["transfer/pretrained_accuracy"][1]) == pytest.approx(result["pretrained_accuracy"], rel=1e-5)
