"""BertPreprocessor: the original run_classifier features, tf.data, Keras models and SavedModels."""

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.text.preprocessor import BertPreprocessor

NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def _original_features(original_classifier, tokenizer, texts_a, texts_b, seq_length):
    features = [
        original_classifier["convert_single_example"](
            10, original_classifier["InputExample"]("guid", a, b, "x"), ["x"], seq_length, tokenizer
        )
        for a, b in zip(texts_a, texts_b)
    ]
    return {
        "input_word_ids": [f.input_ids for f in features],
        "input_mask": [f.input_mask for f in features],
        "input_type_ids": [f.segment_ids for f in features],
    }


@pytest.mark.slow
@pytest.mark.parametrize("seq_length", [24, 128])
def test_matches_original_run_classifier_features(real_vocab_file, real_sentences, edge_cases,
                                                  original_classifier, original_tokenization, seq_length):
    reference = original_tokenization.FullTokenizer(real_vocab_file, do_lower_case=True)
    texts_a = real_sentences[:600:2] + edge_cases
    texts_b = real_sentences[1:600:2] + edge_cases[::-1]
    preprocessor = BertPreprocessor(real_vocab_file, seq_length=seq_length, max_chars_per_token=200)

    single = _original_features(original_classifier, reference, texts_a, [None] * len(texts_a), seq_length)
    out = preprocessor(tf.constant(texts_a))
    for name in NAMES:
        assert out[name].numpy().tolist() == single[name], name

    # The original packs a pair only when the second text has tokens.
    has_b = [bool(reference.tokenize(b)) for b in texts_b]
    pairs_a = [a for a, keep in zip(texts_a, has_b) if keep]
    pairs_b = [b for b, keep in zip(texts_b, has_b) if keep]
    pairs = _original_features(original_classifier, reference, pairs_a, pairs_b, seq_length)
    out = preprocessor((tf.constant(pairs_a), tf.constant(pairs_b)))
    for name in NAMES:
        assert out[name].numpy().tolist() == pairs[name], name


@pytest.mark.slow
def test_pairs_as_list_or_tuple_and_in_tf_data(small_vocab):
    preprocessor = BertPreprocessor(small_vocab, seq_length=16)
    a, b = ["The cat sat.", "Hello world"], ["On the mat.", "Again!"]
    direct = preprocessor((tf.constant(a), tf.constant(b)))
    as_list = preprocessor([a, b])
    single = preprocessor(a)  # a plain list of texts is one batch of single texts
    assert np.array_equal(single["input_word_ids"], preprocessor(tf.constant(a))["input_word_ids"])
    dataset = tf.data.Dataset.from_tensor_slices((a, b)).batch(2).map(lambda x, y: preprocessor((x, y)))
    mapped = next(iter(dataset))
    for name in NAMES:
        assert direct[name].shape == (2, 16) and direct[name].dtype == tf.int32
        assert np.array_equal(as_list[name], direct[name])
        assert np.array_equal(mapped[name], direct[name])
    assert preprocessor.tokenizer.vocab_size == len(small_vocab) and preprocessor.packer.seq_length == 16


def test_bad_input_is_a_clear_error(small_vocab):
    with pytest.raises(ValueError, match="seq_length=1 cannot hold"):
        BertPreprocessor(small_vocab, seq_length=1)
    preprocessor = BertPreprocessor(small_vocab, seq_length=8)
    with pytest.raises(TypeError, match="not a dict"):
        preprocessor({"text": tf.constant(["a"])})
    with pytest.raises(ValueError, match="same batch size"):
        preprocessor((tf.constant(["a", "b"]), tf.constant(["c"])))


@pytest.mark.slow
def test_config_round_trip_and_keras_model_file(tmp_path, real_vocab_file, real_sentences):
    preprocessor = BertPreprocessor(real_vocab_file, seq_length=20, lower_case=True, truncator="waterfall")
    clone = BertPreprocessor.from_config(preprocessor.get_config())
    texts = tf.constant(real_sentences[:40])
    for name in NAMES:
        assert np.array_equal(clone(texts)[name], preprocessor(texts)[name])

    a = keras.Input(shape=(), dtype="string")
    b = keras.Input(shape=(), dtype="string")
    model = keras.Model([a, b], preprocessor((a, b)))
    model.save(tmp_path / "preprocessor.keras")
    reloaded = keras.saving.load_model(tmp_path / "preprocessor.keras")
    pair = [texts, tf.reverse(texts, [0])]
    for name in NAMES:
        assert np.array_equal(reloaded(pair)[name], model(pair)[name])


@pytest.mark.slow
def test_saved_model_serves_raw_strings_without_this_package(tmp_path, small_vocab):
    preprocessor = BertPreprocessor(small_vocab, seq_length=32)

    class Serving(tf.Module):
        def __init__(self, layer):
            super().__init__()
            self.layer = layer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def single(self, text):
            return self.layer(text)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
        def pair(self, text_a, text_b):
            return self.layer((text_a, text_b))

    module = Serving(preprocessor)
    export_dir = str(tmp_path / "export")
    signatures = {"serving_default": module.single, "pair": module.pair}
    tf.saved_model.save(module, export_dir, signatures=signatures)
    texts_a = ["Héllo, wörld! 中文 " + "x" * 150, "The quick brown fox.", ""]
    texts_b = ["Second segment here.", "", "only b"]
    expected = {
        "single": {k: v.numpy().tolist() for k, v in preprocessor(tf.constant(texts_a)).items()},
        "pair": {k: v.numpy().tolist() for k, v in preprocessor((texts_a, texts_b)).items()},
    }
    script = textwrap.dedent(f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops)
        loaded = tf.saved_model.load({export_dir!r})
        single = loaded.signatures["serving_default"](tf.constant({texts_a!r}))
        pair = loaded.signatures["pair"](text_a=tf.constant({texts_a!r}), text_b=tf.constant({texts_b!r}))
        assert not any(name.startswith("keras_bert_lite") for name in sys.modules)
        print(json.dumps({{"single": {{k: v.numpy().tolist() for k, v in single.items()}},
                           "pair": {{k: v.numpy().tolist() for k, v in pair.items()}}}}))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == expected


def test_a_scalar_string_is_one_unbatched_example(small_vocab):
    preprocessor = BertPreprocessor(small_vocab, seq_length=8)
    batched = preprocessor(tf.constant(["The cat sat.", "On the mat."]))
    single = preprocessor("The cat sat.")
    pair = preprocessor((tf.constant("The cat sat."), tf.constant("On the mat.")))
    batched_pair = preprocessor((["The cat sat."], ["On the mat."]))
    for name in NAMES:
        assert single[name].shape == (8,) and pair[name].shape == (8,)
        assert np.array_equal(single[name], batched[name][0])
        assert np.array_equal(pair[name], batched_pair[name][0])
    # In tf.data before batching, as with KerasHub's preprocessors.
    mapped = tf.data.Dataset.from_tensor_slices(["The cat sat.", "On the mat."]).map(preprocessor).batch(2)
    for name in NAMES:
        assert np.array_equal(next(iter(mapped))[name], batched[name])


@pytest.mark.parametrize("inputs", [
    tf.constant([["a", "b"]]),
    (tf.constant("a"), tf.constant(["b"])),
])
def test_inputs_that_are_not_a_batch_of_strings_are_a_clear_error(small_vocab, inputs):
    with pytest.raises(ValueError, match=r"expects a batch of strings \(shape \[batch\]\), a scalar string"):
        BertPreprocessor(small_vocab, seq_length=8)(inputs)
    with pytest.raises(TypeError, match="expects tf.string input, got int32"):
        BertPreprocessor(small_vocab, seq_length=8)(tf.constant([1, 2]))


def test_keras_file_with_a_config_from_before_the_tokenizer_options_loads(tmp_path, small_vocab):
    import zipfile

    preprocessor = BertPreprocessor(small_vocab, seq_length=12)
    text = keras.Input(shape=(), dtype="string")
    model = keras.Model(text, preprocessor(text))
    path = tmp_path / "new.keras"
    model.save(path)
    # The same file as the previous release wrote it: the preprocessor config without the new options.
    old_path = tmp_path / "old.keras"
    with zipfile.ZipFile(path) as new, zipfile.ZipFile(old_path, "w") as old:
        for item in new.infolist():
            data = new.read(item)
            if item.filename == "config.json":
                config = json.loads(data)
                layer = next(x for x in config["config"]["layers"] if x["class_name"] == "BertPreprocessor")
                for option in ("strip_accents", "special_tokens_in_strings", "preserve_unused_tokens"):
                    del layer["config"][option]
                data = json.dumps(config).encode()
            old.writestr(item, data)
    reloaded = keras.saving.load_model(old_path)
    texts = tf.constant(["Café [MASK] au lait!", "[unused0] naïve"])
    for name in NAMES:
        assert np.array_equal(reloaded(texts)[name], model(texts)[name])


@pytest.mark.parametrize("name", ["sequence_length", "seq_length"])
def test_length_is_settable_after_construction_without_rebuilding_the_tokenizer(small_vocab, name):
    # As KerasHub users do (`preprocessor.sequence_length = 17`), under its name and ours.
    preprocessor = BertPreprocessor(small_vocab, seq_length=8)
    tokenizer, wordpiece = preprocessor.tokenizer, preprocessor.tokenizer._wordpiece
    texts = tf.constant(["The cat sat on the mat, and then it slept for a while.", "Hello"])
    assert preprocessor(texts)["input_word_ids"].shape == (2, 8)

    setattr(preprocessor, name, 17)
    assert preprocessor.seq_length == preprocessor.sequence_length == 17
    assert preprocessor.get_config()["seq_length"] == 17
    assert preprocessor.tokenizer is tokenizer and tokenizer._wordpiece is wordpiece
    fresh = BertPreprocessor(small_vocab, seq_length=17)
    for inputs in (texts, (texts, tf.reverse(texts, [0])), "one example"):
        out, expected = preprocessor(inputs), fresh(inputs)
        for key in NAMES:
            assert out[key].shape[-1] == 17
            assert np.array_equal(out[key], expected[key]), key
    symbolic = preprocessor(keras.Input(shape=(), dtype="string"))
    assert symbolic["input_word_ids"].shape == (None, 17)
    assert BertPreprocessor.from_config(preprocessor.get_config()).seq_length == 17

    for bad in (1, 2.5, "17", None):
        with pytest.raises(ValueError, match="seq_length must be an integer of at least 2"):
            setattr(preprocessor, name, bad)
    assert preprocessor.seq_length == 17
