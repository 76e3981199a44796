"""tpu/main_job_transfer.py: the transfer suite's tasks (labelled by source, split by document,
balanced, from the documents given only) and the pre-trained vs random-init comparison, on a
one-layer model and synthetic documents."""

import main_job_transfer as transfer
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models import BertEncoder
from keras_bert_lite.text.preprocessor import BertPreprocessor

WORDS = ["module", "object", "string", "file", "array", "axis", "layer", "model"]
SOURCES = ["help:assert", "json.decoder", "numpy._core.fromnumeric", "tensorflow.python.ops.math_ops",
           "keras.src.layers.core.dense", "absl.flags"]
# One source a document, for 30 documents: enough for the suite's tasks at small sizes.
SUITE_SOURCES = [("json.decoder", "numpy.linalg", "tensorflow.python.ops", "keras.src.ops")[i % 4] for i in range(30)]


def documents(count: int, offset: int = 0, sentences: int = 3) -> list[list[str]]:
    """`count` documents of `sentences` sentences each, every sentence unique (numbered)."""
    return [[f"the {WORDS[(i + k) % 8]} and the {WORDS[(i + k + 1) % 8]} {offset + 1000 * i + k} ."
             for k in range(sentences)] for i in range(count)]


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "and", "."] + WORDS + [
        str(d) for d in range(10)] + [f"##{d}" for d in range(10)]
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("".join(t + "\n" for t in tokens))
    return str(path)


def test_tasks_are_labelled_by_source_split_by_document_and_balanced():
    kept_out = documents(60, sentences=12)
    sources = [SOURCES[i % len(SOURCES)] for i in range(len(kept_out))]
    training_text = {s for d in documents(5, offset=500) for s in d}  # what pre-training saw
    sizes = (10, 4, 8)
    tasks = transfer.build_tasks(kept_out, sources, sizes=sizes, seed=3)
    assert list(tasks) == ["python_or_package", "numpy_or_tensorflow", "keras_or_tensorflow"]
    document_of = {s: i for i, d in enumerate(kept_out) for s in d}
    package = {"help:assert": "python", "json.decoder": "python"}
    for name, task in tasks.items():
        classes = transfer.TASKS[name][1]
        used = []
        for (sentences, labels), size in zip((task.train, task.validation, task.test), sizes):
            assert len(sentences) == len(labels) == 2 * size and labels.dtype == np.int32
            assert np.bincount(labels).tolist() == [size, size]  # balanced
            assert len(set(sentences)) == len(sentences) and not training_text & set(sentences)
            for sentence, label in zip(sentences, labels):
                source = sources[document_of[sentence]]
                expected = package.get(source, "package") if name == "python_or_package" else source.split(".")[0]
                assert classes[label] == expected, (name, sentence, source)
            used.append({document_of[s] for s in sentences})
        # Split by document: no document gives sentences to two splits.
        assert not used[0] & used[1] and not used[0] & used[2] and not used[1] & used[2], name
    again = transfer.build_tasks(kept_out, sources, sizes=sizes, seed=3)
    assert all(again[name].test[0] == task.test[0] for name, task in tasks.items())
    # A long document gives at most MAX_SENTENCES_PER_DOCUMENT sentences, evenly spaced.
    long = documents(1, offset=100_000, sentences=3 * transfer.MAX_SENTENCES_PER_DOCUMENT)
    tasks = transfer.build_tasks(long + kept_out, ["absl.logging"] + sources, sizes=sizes)
    task = tasks["python_or_package"]
    drawn = set(task.train[0] + task.validation[0] + task.test[0]) & set(long[0])
    assert drawn and drawn <= set(long[0][::3][: transfer.MAX_SENTENCES_PER_DOCUMENT])


def test_too_few_documents_for_a_task_is_one_error_naming_it():
    kept_out = documents(12, sentences=12)
    with pytest.raises(ValueError, match=r"^task python_or_package: 0 package sentences for its train split"):
        transfer.build_tasks(kept_out, ["json.decoder"] * 12, sizes=(10, 4, 8))
    sources = ["numpy.linalg"] + ["json.decoder", "tensorflow.python.ops"] * 5 + ["keras.ops"]
    with pytest.raises(ValueError, match=r"^task numpy_or_tensorflow: [0-9] numpy sentences for its \w+ split from "
                                         r"the documents kept out of pre-training, \d+ needed\.$"):
        transfer.build_tasks(kept_out, sources, sizes=(10, 4, 8))
    # TensorFlow's copy of Keras is in neither class of keras_or_tensorflow (a package all the same).
    label_of = {name: rule for name, (_, _, rule) in transfer.TASKS.items()}
    assert [label_of["keras_or_tensorflow"](s) for s in ("keras.src.ops", "tensorflow.python.ops",
                                                         "tensorflow.python.keras.layers", "numpy")] == [0, 1, None, None]
    assert label_of["python_or_package"]("tensorflow.python.keras.layers") == 1
    with pytest.raises(ValueError, match="12 documents but 11 sources"):
        transfer.build_tasks(kept_out, sources[:11])


@pytest.mark.slow
def test_transfer_suite_compares_both_sides_on_every_task(vocab_file, tmp_path):
    kept_out = documents(30, sentences=20)
    tasks = transfer.build_tasks(kept_out, SUITE_SOURCES, sizes=(24, 8, 16))
    tasks = {name: tasks[name] for name in ("python_or_package", "numpy_or_tensorflow")}
    config = BertConfig.preset("tiny", vocab_size=36, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                               num_hidden_layers=1, max_position_embeddings=24)
    encoder = BertEncoder(config)
    before = [w.copy() for w in encoder.get_weights()]
    grid = (1e-2, 1e-5, 1e-2)  # a rate twice: each run starts afresh (weights, optimizer state, shuffling)
    result = transfer.transfer_suite(encoder, vocab_file, tasks, seq_length=24, learning_rates=grid, epochs=1)
    assert all(np.array_equal(a, b) for a, b in zip(before, encoder.get_weights()))  # fine-tuned copies only
    assert set(result["tasks"]) == set(tasks) and result["grid"] == list(grid) and result["seq_length"] == 24
    for task in result["tasks"].values():
        assert (task["train_examples"], task["validation_examples"], task["test_examples"]) == (48, 16, 32)
        assert task["majority"] == pytest.approx(0.5)
        for side in ("pretrained", "random_init"):
            assert 0 <= task[side] <= 1 and len(task["validation"][side]) == 3
            assert task["validation"][side][0] == task["validation"][side][2]
            assert task["learning_rates"][side] == grid[int(np.argmax(task["validation"][side]))]
        assert task["gain"] == pytest.approx(100 * (task["pretrained"] - task["random_init"]))
    assert result["mean_gain"] == pytest.approx(np.mean([t["gain"] for t in result["tasks"].values()]))
    printed = transfer.format_result(result)
    assert "48 / 16 / 32 to fine-tune / choose the learning rate among 0.01, 1e-05, 0.01 / test" in printed
    assert f"mean gain {result['mean_gain']:+.1f} points" in printed
    transfer.write_summaries(str(tmp_path), result, step=7)
    events = [e for f in tmp_path.glob("events.*") for e in tf.compat.v1.train.summary_iterator(str(f))]
    tags = {v.tag: (e.step, float(tf.make_ndarray(v.tensor))) for e in events for v in e.summary.value}
    assert tags["transfer/mean_gain_points"] == (7, pytest.approx(result["mean_gain"], rel=1e-5))
    task = result["tasks"]["numpy_or_tensorflow"]
    assert tags["transfer/numpy_or_tensorflow/random_init"] == (7, pytest.approx(task["random_init"], rel=1e-5))
    assert len(tags) == 1 + 4 * len(tasks)


def test_every_fine_tuning_run_computes_what_a_first_run_would(vocab_file):
    """A run after others (the classifier reused, its variables and optimizer reset) ends with the
    weights, and the accuracies, of the same run made first by a new tuner: dropout masks included."""
    task = transfer.build_tasks(documents(30, sentences=20), SUITE_SOURCES, sizes=(16, 4, 8))["python_or_package"]
    preprocessor = BertPreprocessor(vocab_file, seq_length=24)
    train, evaluate = (({k: v.numpy() for k, v in preprocessor(tf.constant(texts)).items()}, labels)
                       for texts, labels in (task.train, task.test))
    config = BertConfig.preset("tiny", vocab_size=36, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                               num_hidden_layers=1, max_position_embeddings=24, hidden_dropout_prob=0.3)
    encoder = BertEncoder(config)
    later, first = transfer._FineTuner(encoder, seed=5), transfer._FineTuner(encoder, seed=5)
    later.run(2, 1e-2, train, [evaluate], epochs=2)
    accuracies = later.run(2, 3e-3, train, [evaluate], epochs=2)
    assert first.run(2, 3e-3, train, [evaluate], epochs=2) == accuracies
    for a, b in zip(later.models[2][0].get_weights(), first.models[2][0].get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
