"""BertClassifier on raw text: from_checkpoint on each folder kind, fit/evaluate/predict on every
container of strings and pairs, logits (or probabilities if asked) and label names, the default
compile over several fit calls (and the user's own), one `.keras` file that a fresh process loads and runs on strings, quantized and LoRA models."""

import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.config import BertConfig
from keras_bert_lite.interop import save_google_checkpoint, save_hf_checkpoint
from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import BertEncoder

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "warm", "funny", "film", "dull", "slow", "and",
         "great", "bad", ",", "."]
TEXTS = ["a warm, funny film.", "dull and slow.", "a great film.", "bad, bad film.",
         "warm and funny.", "slow film.", "great, great.", "a dull film."]
LABELS = ["positive", "negative", "positive", "negative", "positive", "negative", "positive", "negative"]
IDS = np.array([LABELS[i] == "positive" for i in range(8)], "int32")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """The same tiny encoder as our output folder, a Google release folder and a Hugging Face folder."""
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=len(VOCAB), num_hidden_layers=1,
                                            max_position_embeddings=32))
    root = tmp_path_factory.mktemp("folders")
    ours, google = root / "pretrain", root / "uncased_L-1_H-32"
    for folder in (ours, google):
        folder.mkdir()
        (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
        encoder.config.to_json_file(folder / "bert_config.json")
    encoder.save(str(ours / "encoder.keras"))
    save_google_checkpoint(encoder, str(google / "bert_model.ckpt"))
    save_hf_checkpoint(encoder, str(root / "hf"), VOCAB)
    return {"keras": ours, "google": google, "hugging_face": root / "hf"}


@pytest.fixture(scope="module")
def clf(folders):
    """A classifier fine-tuned by a default-compiled fit on a list of strings with label names."""
    keras.utils.set_random_seed(1)
    model = BertClassifier.from_checkpoint(folders["keras"], num_classes=2, seq_length=12,
                                           label_names=["negative", "positive"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. Keras' "shuffle=True ... will be ignored"
        model.fit(TEXTS, LABELS, batch_size=4, epochs=2, verbose=0)
    return model


@pytest.mark.slow
def test_from_checkpoint_on_each_folder_kind_gives_the_same_model(folders):
    keras.utils.set_random_seed(2)
    probabilities, head = {}, None
    for kind in ("keras", "google", "hugging_face"):
        model = BertClassifier.from_checkpoint(folders[kind], num_classes=3, seq_length=12, activation="softmax")
        assert model.preprocessor.seq_length == 12 and model.preprocessor.tokenizer.lower_case, kind
        head = head or model.classifier.get_weights()
        model.classifier.set_weights(head)  # one head: only the encoders' folders differ
        probabilities[kind] = model.predict(TEXTS[:3], verbose=0)
        assert probabilities[kind].shape == (3, 3), kind
        np.testing.assert_allclose(probabilities[kind].sum(-1), 1.0, atol=1e-6)  # softmax, as asked
    # Same weights and vocabulary through each folder kind's writer and reader: identical outputs
    # (tolerance 1e-6: float32 round trips are exact), compared over the three pairs of kinds.
    for kind, other in (("keras", "hugging_face"), ("google", "keras"), ("hugging_face", "google")):
        np.testing.assert_allclose(probabilities[kind], probabilities[other], atol=1e-6, err_msg=f"{kind} vs {other}")


@pytest.mark.slow
def test_default_compile_is_berts_adamw_at_a_constant_rate_over_any_number_of_fits(clf):
    optimizer = clf.optimizer
    assert isinstance(optimizer, keras.optimizers.AdamW) and float(optimizer.learning_rate) == pytest.approx(5e-5)
    assert (optimizer.weight_decay, optimizer.epsilon, optimizer.global_clipnorm) == (0.01, 1e-6, 1.0)
    assert isinstance(clf.loss, keras.losses.SparseCategoricalCrossentropy) and clf.loss.from_logits
    assert set(clf.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)) == {"loss", "accuracy"}
    assert int(optimizer.iterations) == 4  # the fixture's fit: 2 epochs x ceil(8 / 4) steps
    kernel = clf.classifier.dense.kernel.numpy()
    history = clf.fit(TEXTS, LABELS, batch_size=4, epochs=1, verbose=0,  # a second fit trains on
                      validation_data=(TEXTS[:3], LABELS[:3])).history
    assert int(optimizer.iterations) == 6 and np.isfinite(history["loss"][0]) and np.isfinite(history["val_loss"][0])
    assert not np.allclose(clf.classifier.dense.kernel.numpy(), kernel)
    assert float(optimizer.learning_rate) == pytest.approx(5e-5)


@pytest.mark.slow
def test_the_users_compile_overrides_the_default(folders):
    model = BertClassifier.from_checkpoint(folders["keras"], num_classes=2, seq_length=12)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    model.fit(TEXTS, IDS, batch_size=8, epochs=1, verbose=0)
    assert isinstance(model.optimizer, keras.optimizers.SGD) and model.loss == "sparse_categorical_crossentropy"
    model.compile(jit_compile=False)  # back to the defaults, with a fresh optimizer
    assert isinstance(model.optimizer, keras.optimizers.AdamW) and model.loss.from_logits
    model.fit(TEXTS, IDS, batch_size=8, epochs=3, verbose=0)
    assert int(model.optimizer.iterations) == 3
    model.compile(learning_rate=3e-4)  # the default optimizer at another constant rate
    model.fit(TEXTS, IDS, batch_size=8, epochs=1, verbose=0)
    assert isinstance(model.optimizer, keras.optimizers.AdamW) and model.optimizer.global_clipnorm == 1.0
    assert float(model.optimizer.learning_rate) == pytest.approx(3e-4)
    with pytest.raises(ValueError, match="learning_rate applies to the default optimizer"):
        model.compile(optimizer=keras.optimizers.SGD(0.1), learning_rate=1e-3)
    with pytest.raises(ValueError, match="learning_rate must be positive"):
        model.compile(learning_rate=0.0)


def test_predict_returns_what_calling_the_model_returns_and_softmax_when_asked(clf):
    ids = clf.preprocessor(tf.constant(TEXTS))
    logits = clf.predict(TEXTS, verbose=0)
    np.testing.assert_allclose(logits, clf(ids, training=False), atol=1e-6)
    assert not np.allclose(logits.sum(-1), 1.0)  # logits, not probabilities
    softmax = BertClassifier(clf.encoder, num_classes=2, preprocessor=clf.preprocessor, activation="softmax")
    softmax.classifier.set_weights(clf.classifier.get_weights())
    np.testing.assert_allclose(softmax.predict(TEXTS, verbose=0), tf.nn.softmax(logits), atol=1e-6)
    softmax.compile()
    assert not softmax.loss.from_logits
    with pytest.raises(ValueError, match="activation must be None \\(logits\\) or 'softmax'"):
        BertClassifier(clf.encoder, num_classes=2, activation="relu")


@pytest.mark.slow
@pytest.mark.parametrize("container", ["numpy", "dataset", "pairs", "pair_dataset"])
def test_every_container_of_text(clf, container):
    pairs = [(TEXTS[i], TEXTS[-1 - i]) for i in range(8)]
    if container == "numpy":
        x, y = np.array(TEXTS), IDS
    elif container == "dataset":
        x, y = tf.data.Dataset.from_tensor_slices((TEXTS, IDS)).batch(3), None
    elif container == "pairs":
        x, y = pairs, IDS
    else:
        x, y = tf.data.Dataset.from_tensor_slices(((TEXTS, TEXTS[::-1]), IDS)).batch(3), None
    loss = clf.evaluate(x, y, verbose=0, return_dict=True)["loss"]
    assert np.isfinite(loss)
    features = x.map(lambda texts, labels: texts) if y is None else x
    logits = clf.predict(features, verbose=0)
    assert logits.shape == (8, 2)
    if container == "numpy":
        np.testing.assert_allclose(logits, clf.predict(TEXTS, verbose=0), atol=1e-6)
    if container == "pairs":
        expected = clf.predict(tf.data.Dataset.from_tensor_slices((TEXTS, TEXTS[::-1])).batch(3), verbose=0)
        np.testing.assert_allclose(logits, expected, atol=1e-6)


def test_predict_labels_and_bad_labels(clf):
    names = clf.predict_labels(TEXTS, verbose=0)
    logits = clf.predict(TEXTS, verbose=0)
    assert names == [("negative", "positive")[i] for i in np.argmax(logits, -1)]
    with pytest.raises(ValueError, match=r"y\[1\] is 'neutral', not one of the label names"):
        clf.evaluate(TEXTS[:2], ["positive", "neutral"], verbose=0)
    with pytest.raises(ValueError, match="label_names must name each of the 2 classes once"):
        BertClassifier(clf.encoder, num_classes=2, label_names=["a", "a"])


def test_id_inputs_still_work_and_text_needs_a_preprocessor(clf):
    ids = clf.preprocessor(tf.constant(TEXTS))
    np.testing.assert_allclose(clf.predict(ids, verbose=0), clf.predict(TEXTS, verbose=0), atol=1e-6)
    bare = BertClassifier(clf.encoder, num_classes=2)
    with pytest.raises(ValueError, match="has no preprocessor, so it takes token ids only"):
        bare.predict(TEXTS, verbose=0)


def test_truncation_is_counted_and_logged_and_empty_input_gives_empty_outputs(clf, caplog):
    long_text = " ".join(["a warm, funny film."] * 3)  # 15 pieces: more than seq_length 12 holds
    assert clf.preprocessor.count_truncated(tf.constant([long_text, TEXTS[0]])) == 1
    pair = (tf.constant(["a film.", "a film."]), tf.constant(["dull and slow, a warm", "dull and slow, a warm film"]))
    assert clf.preprocessor.count_truncated(pair) == 1  # 3 + 6 + 3 pieces fit in 12, 3 + 7 + 3 do not
    with caplog.at_level("WARNING"):
        clf.predict([long_text, TEXTS[0], long_text], verbose=0)
    assert "bert_classifier: 2 of 3 texts have more word pieces than seq_length=12 holds" in caplog.text
    caplog.clear()
    clf.predict(TEXTS, verbose=0)
    assert "truncated" not in caplog.text
    for empty in ([], np.array([], object), ([], [])):
        assert clf.predict(empty).shape == (0, 2) and clf.predict(empty).dtype == np.float32
        assert clf.predict_labels(empty) == []
    with pytest.raises(ValueError, match="x is None"):
        clf.predict_labels(None)


@pytest.mark.slow
def test_one_keras_file_predicts_on_strings_in_a_fresh_process(clf, tmp_path):
    path = tmp_path / "clf.keras"
    clf.save(path)
    expected = clf.predict(TEXTS, verbose=0)
    code = (
        "import sys, keras, numpy as np\n"
        "import keras_bert_lite  # registers the classes\n"
        "model = keras.saving.load_model(sys.argv[1])\n"
        "print(model.predict_labels(sys.argv[2:], verbose=0))\n"
        "np.save(sys.argv[1] + '.npy', model.predict(sys.argv[2:], verbose=0))\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(path), *TEXTS], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == str(clf.predict_labels(TEXTS, verbose=0))
    np.testing.assert_allclose(np.load(str(path) + ".npy"), expected, atol=1e-6)  # same float32 graph


@pytest.mark.slow
@pytest.mark.usefixtures("frozen_gc")
@pytest.mark.parametrize("edit", ["lora", "int8"])
def test_lora_and_quantized_text_models_save_and_load(folders, edit, tmp_path):
    model = BertClassifier.from_checkpoint(folders["keras"], num_classes=2, seq_length=12, label_names=["n", "p"])
    if edit == "lora":
        model.encoder.enable_lora(2)
    else:
        model.quantize("int8")
    expected = model.predict(TEXTS, verbose=0)
    model.save(tmp_path / "edited.keras")
    loaded = keras.saving.load_model(tmp_path / "edited.keras")
    assert loaded.label_names == ("n", "p")
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), expected, atol=1e-6)


def test_the_text_path_is_exported_at_top_level():
    import keras_bert_lite as kbl
    from keras_bert_lite.data import check_pretraining_files
    from keras_bert_lite.models import checkpoint_folder, rebuild, text_inputs

    assert (kbl.from_checkpoint, kbl.find_checkpoint) == (checkpoint_folder.from_checkpoint,
                                                         checkpoint_folder.find_checkpoint)
    assert (kbl.text_dataset, kbl.save_model) == (text_inputs.text_dataset, rebuild.save_model)
    assert kbl.check_pretraining_files is check_pretraining_files
