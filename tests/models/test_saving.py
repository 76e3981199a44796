"""save_model and every model's `save`: .keras files without the optimizer (its slots and its
config, which Keras' own `save` keeps whatever `include_optimizer` says), made without a copy of the
model, loadable, the same outputs, written atomically."""

import io
import json
import zipfile

import h5py
import keras
import numpy as np
import pytest

from keras_bert_lite import create_optimizer
from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.classifier import BertClassifier
from keras_bert_lite.models.encoder import BertEncoder
from keras_bert_lite.models.rebuild import save_model

VOCAB = 100


def _weight_groups(path) -> set[str]:
    """Top-level groups of the archive's weights file ("layers", "optimizer", ...)."""
    with zipfile.ZipFile(path) as archive, archive.open("model.weights.h5") as f:
        with h5py.File(io.BytesIO(f.read()), "r") as weights:
            return set(weights)


def _inputs(batch=8, seq=8):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, VOCAB, (batch, seq)).astype("int32")
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}


@pytest.fixture(scope="module")
def trained():
    """A classifier after two AdamW steps (the optimizer has its slots)."""
    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=VOCAB, num_hidden_layers=1, hidden_size=32,
                               num_attention_heads=2, intermediate_size=64)
    model = BertClassifier(BertEncoder(config), num_classes=2)
    model.compile(optimizer=create_optimizer(1e-3, 10, 1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    model.fit(_inputs(), np.arange(8) % 2, batch_size=4, epochs=1, verbose=0)
    return model


@pytest.mark.slow
def test_without_the_optimizer_the_file_holds_the_model_only(trained, tmp_path):
    keras_file = tmp_path / "keras_save.keras"
    keras.Model.save(trained, keras_file, include_optimizer=False)  # Keras' own save ignores the argument
    assert "optimizer" in _weight_groups(keras_file)
    ours = tmp_path / "model.keras"
    assert save_model(trained, ours) == str(ours)
    assert "optimizer" not in _weight_groups(ours)
    # AdamW keeps two float32 slots per weight: leaving them out saves twice the weights' bytes.
    weight_bytes = sum(np.asarray(w).nbytes for w in trained.weights)
    assert keras_file.stat().st_size - ours.stat().st_size > 1.9 * weight_bytes
    loaded = keras.saving.load_model(ours)
    assert isinstance(loaded, BertClassifier) and getattr(loaded, "optimizer", None) is None
    x = _inputs()
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), trained.predict(x, verbose=0))
    assert trained.optimizer.iterations.numpy() == 2  # the trained model keeps its optimizer
    assert trained.compiled and not json.loads(zipfile.ZipFile(ours).read("config.json")).get("compile_config")


@pytest.mark.slow
def test_include_optimizer_keeps_it(trained, tmp_path):
    path = save_model(trained, tmp_path / "with_optimizer.keras", include_optimizer=True)
    assert "optimizer" in _weight_groups(path)
    loaded = keras.saving.load_model(path)
    assert int(loaded.optimizer.iterations.numpy()) == 2


def test_failed_saves_leave_nothing_and_bad_names_are_refused(trained, tmp_path):
    with pytest.raises(ValueError, match=r"save_model writes .keras files; got .*model.h5"):
        save_model(trained, tmp_path / "model.h5")
    (tmp_path / "folder.keras").mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        save_model(trained, tmp_path / "folder.keras")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.keras"]  # no partial files left


def test_task_models_save_without_the_optimizer_unless_asked(trained, tmp_path):
    trained.save(tmp_path / "default.keras")
    assert "optimizer" not in _weight_groups(tmp_path / "default.keras")
    trained.save(tmp_path / "with.keras", include_optimizer=True)
    assert "optimizer" in _weight_groups(tmp_path / "with.keras")
    with pytest.raises(FileExistsError, match="default.keras exists"):
        trained.save(tmp_path / "default.keras", overwrite=False)


def test_a_compiled_encoder_saves_without_its_optimizer(tmp_path):
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=VOCAB, num_hidden_layers=1))
    encoder.compile(optimizer="adam", loss="mse")
    encoder.optimizer.build(encoder.trainable_variables)  # its slots, as after `fit`
    optimizer = encoder.optimizer
    encoder.save(tmp_path / "encoder.keras")
    assert "optimizer" not in _weight_groups(tmp_path / "encoder.keras")
    assert not json.loads(zipfile.ZipFile(tmp_path / "encoder.keras").read("config.json")).get("compile_config")
    assert encoder.optimizer is optimizer and encoder.compiled  # as it was before the save
    loaded = keras.saving.load_model(tmp_path / "encoder.keras")
    assert isinstance(loaded, BertEncoder) and not loaded.compiled
