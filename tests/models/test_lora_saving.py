"""LoRA through saving: a `.keras` file of a model with LoRA trains its adapters again when loaded
in a new process, and LoRA weight files hold the adapters alone (`save_lora_weights`)."""

import json
import os
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

import keras_bert_lite as kbl

CONFIG = kbl.BertConfig(
    vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
    max_position_embeddings=32,
)
REPO = pathlib.Path(__file__).parents[2]


def _features(batch=8, seq=12):
    ids = np.random.default_rng(0).integers(5, CONFIG.vocab_size, (batch, seq)).astype("int32")
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}


def _lora_factors(encoder) -> dict[str, np.ndarray]:
    return {v.path: v.numpy() for v in encoder.weights if "lora_kernel" in v.path}


_TRAIN_AGAIN = """
import json, sys
import keras, numpy as np
import keras_bert_lite  # registers the model classes, as any program loading them does
path, features, labels = sys.argv[1], dict(np.load(sys.argv[2])), np.load(sys.argv[3])
keras.utils.set_random_seed(0)  # dropout's masks: the same run every time
model = keras.saving.load_model(path)
factors = {v.path: v.numpy() for v in model.encoder.weights if "lora_kernel" in v.path}
frozen = {v.path: v.numpy() for v in model.encoder.weights if "lora_kernel" not in v.path}
outputs = model.predict(features, verbose=0)
model.compile(optimizer=keras.optimizers.Adam(0.02), loss=keras.losses.SparseCategoricalCrossentropy(True))
history = model.fit(features, labels, epochs=20, batch_size=8, verbose=0).history["loss"]
print(json.dumps({
    "outputs": outputs.tolist(), "loss": history,
    "trainable": sorted(v.path for v in model.trainable_weights),
    "a_nonzero": all(np.any(value != 0) for key, value in factors.items() if key.endswith("_a")),
    "b_zero": all(not np.any(value) for key, value in factors.items() if key.endswith("_b")),
    "moved": all(np.any(v.numpy() != factors[v.path]) for v in model.encoder.weights if v.path in factors),
    "frozen_kept": all(np.array_equal(v.numpy(), frozen[v.path]) for v in model.encoder.weights if v.path in frozen),
}))
"""


@pytest.mark.slow
@pytest.mark.subprocess
def test_lora_trains_again_after_loading_in_a_new_process(tmp_path):
    keras.utils.set_random_seed(0)
    model = kbl.BertClassifier(kbl.BertEncoder(CONFIG), num_classes=2)
    model.encoder.enable_lora(4)
    features, labels = _features(), np.arange(8) % 2
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss=keras.losses.SparseCategoricalCrossentropy(True))
    model.fit(features, labels, epochs=2, batch_size=8, verbose=0)
    model.save(tmp_path / "lora.keras")
    np.savez(tmp_path / "features.npz", **features)
    np.save(tmp_path / "labels.npy", labels)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", _TRAIN_AGAIN, str(tmp_path / "lora.keras"), str(tmp_path / "features.npz"),
         str(tmp_path / "labels.npy")],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # The kernels hold the LoRA update merged in: the same outputs (float32 sums in another order).
    np.testing.assert_allclose(result["outputs"], model.predict(features, verbose=0), rtol=1e-5, atol=1e-5)
    assert result["trainable"] == sorted(v.path for v in model.trainable_weights)  # LoRA factors and the head
    assert result["a_nonzero"] and result["b_zero"]  # new adapters on the merged kernel, as enable_lora makes
    assert result["moved"] and result["frozen_kept"]  # the adapters train; the frozen weights stay
    assert result["loss"][-1] < result["loss"][0], result["loss"]  # the adapters learn


def test_lora_weight_files_hold_the_adapters_alone(tmp_path):
    keras.utils.set_random_seed(1)
    base = kbl.BertEncoder(CONFIG)
    base_weights = base.get_weights()
    base.enable_lora(2, target_names=["query", "intermediate"])
    rng = np.random.default_rng(1)
    for variable in base.weights:
        if "lora_kernel" in variable.path:  # as if trained: both factors non-zero
            variable.assign(rng.normal(0, 0.1, variable.shape).astype("float32"))
    features = _features()
    expected = base(features)["sequence_output"]
    path = base.save_lora_weights(tmp_path / "adapters.lora.h5")
    lora_bytes = sum(value.nbytes for value in _lora_factors(base).values())
    assert os.path.getsize(path) < lora_bytes + 16_384  # the factors and a little HDF5 structure
    assert os.path.getsize(path) < sum(np.asarray(w).nbytes for w in base.weights) / 5

    fresh = kbl.BertEncoder(CONFIG)
    fresh.set_weights(base_weights)
    fresh.load_lora_weights(path)  # enables LoRA with the file's rank and targets
    assert (fresh.lora_rank, fresh.lora_target_names) == (2, ["query", "intermediate"])
    for key, value in _lora_factors(base).items():
        np.testing.assert_array_equal(_lora_factors(fresh)[key], value)
    np.testing.assert_allclose(fresh(features)["sequence_output"], expected, rtol=1e-5, atol=1e-5)

    other_rank = kbl.BertEncoder(CONFIG, lora_rank=4)
    with pytest.raises(ValueError, match=r"adapters.lora.h5 holds LoRA of rank 2 on \['query', 'intermediate'\]"):
        other_rank.load_lora_weights(path)
    wider = kbl.BertEncoder(kbl.BertConfig.from_dict({**CONFIG.to_dict(), "intermediate_size": 128}))
    with pytest.raises(ValueError, match=r"transformer_layer_0/intermediate/lora_kernel_b is \(2, 64\); .* needs \(2, 128\)"):
        wider.load_lora_weights(path)
    assert wider.lora_rank is None  # checked before anything changed
    with pytest.raises(ValueError, match=r"LoRA weight files end in '.lora.h5'; got .*adapters.h5"):
        base.save_lora_weights(tmp_path / "adapters.h5")
    with pytest.raises(ValueError, match="LoRA is not enabled"):
        kbl.BertEncoder(CONFIG).save_lora_weights(tmp_path / "none.lora.h5")
