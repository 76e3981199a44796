"""`benchmarks/transfer_outside_corpus.py`: the classifiers it fine-tunes are the checkpoint's, its
random-init twin, or the checkpoint's with the `--reinitialize` layers taken from the twin, both
with `--pooling`'s pooling; `--sides` picks which are fine-tuned; a bad package task is named early."""

import pathlib
import re
from unittest import mock

import numpy as np
import pytest
from absl import flags

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.encoder import BertEncoder
from tests.examples import scripts

BENCHMARK = pathlib.Path(__file__).parents[1] / "benchmarks" / "transfer_outside_corpus.py"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory):
    """The script's module, its flags parsed for a two-layer checkpoint folder of ours."""
    folder = tmp_path_factory.mktemp("pretrain")
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=len(VOCAB), max_position_embeddings=16))
    encoder.save(str(folder / "encoder.keras"))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    with mock.patch.dict("os.environ"):  # the script sets its TF_* defaults; keep them out of other tests
        module = scripts.load_script(BENCHMARK)
    module.FLAGS([str(BENCHMARK), f"--checkpoint={folder}", "--seq_length=16"])
    return module, encoder


def _same(encoder, other, name):
    """Whether layer `name` holds the same weights in both encoders."""
    pairs = zip(encoder.get_layer(name).get_weights(), other.get_layer(name).get_weights(), strict=True)
    return all(np.array_equal(a, b) for a, b in pairs)


def test_each_side_and_reinitialized_layers(benchmark):
    module, saved = benchmark
    names = ["embeddings", "transformer_layer_0", "transformer_layer_1", "pooler"]
    pretrained, random_init = module.classifier("pretrained", 1), module.classifier("random_init", 1)
    for name in names:
        assert _same(pretrained.encoder, saved, name) and not _same(random_init.encoder, saved, name), name
    module.FLAGS.reinitialize = ["transformer_layer_1", "pooler"]
    try:
        mixed = module.classifier("pretrained", 1)
    finally:
        module.FLAGS.reinitialize = []
    for name in names:
        kept = name not in ("transformer_layer_1", "pooler")
        assert _same(mixed.encoder, saved, name) == kept, name


def test_pooling_reaches_both_sides_and_a_bad_mode_names_the_flag(benchmark):
    module, _ = benchmark
    assert module.classifier("pretrained", 1).pooling == module.classifier("random_init", 1).pooling == "pooler"
    module.FLAGS.pooling = ["mean", "max"]
    try:
        sides = module.classifier("pretrained", 1), module.classifier("random_init", 1)
    finally:
        module.FLAGS.pooling = ["pooler"]
    assert [side.pooling for side in sides] == [("mean", "max")] * 2
    with pytest.raises(flags.IllegalFlagValueError, match="pooling.*must be pooler"):
        module.FLAGS.pooling = ["avg"]


def test_layer_rate_decay_scales_each_layers_step(benchmark):
    """`--layer_rate_decay=0.5` on two layers: from the same weights and gradients, each variable's
    first step is its layer's factor times the step of `compile()`'s default optimizer (the
    embeddings 0.25, layer 0 0.5, layer 1, the pooler and the head 1)."""
    module, _ = benchmark
    model = module.classifier("pretrained", 1)
    variables = model.trainable_variables
    start = [variable.numpy() for variable in variables]
    gradients = [np.ones(variable.shape, "float32") for variable in variables]

    def steps(optimizer):
        optimizer.apply(gradients, variables)
        moved = [variable.numpy() - before for variable, before in zip(variables, start, strict=True)]
        for variable, before in zip(variables, start, strict=True):
            variable.assign(before)
        return moved

    uniform = steps(module.default_optimizer(1e-3))
    layerwise = steps(module.layerwise_optimizer(model, 1e-3, 0.5))
    expected = {"embeddings": 0.25, "transformer_layer_0": 0.5, "transformer_layer_1": 1.0, "pooler": 1.0,
                "classifier": 1.0}
    for variable, before, one, scaled in zip(variables, start, uniform, layerwise, strict=True):
        # Both apply the same decoupled weight decay (0.01 x rate x weight, not on LayerNorm and biases).
        decay = 0 if variable.name in ("gamma", "beta", "bias") else -0.01 * 1e-3 * before
        scale = expected[variable.path.split("/")[0]]
        np.testing.assert_allclose(scaled, scale * (one - decay) + decay, rtol=1e-4, atol=1e-8, err_msg=variable.path)


def test_sides_fine_tunes_the_sides_named_and_gains_only_with_both(benchmark):
    """Each side's accuracy at each rate is the mean over the seeds; the gain compares each side's best
    rate. `--sides=pretrained` fine-tunes the checkpoint alone (a ceiling) and reports no gain."""
    module, _ = benchmark
    calls = []

    def accuracy(task, side, rate, seed):
        calls.append((side, rate, seed))
        return {"pretrained": 0.8, "random_init": 0.7}[side] + rate + seed / 100

    with mock.patch.object(module, "fine_tuned_accuracy", accuracy):
        both = module.task_accuracies({}, [1e-3, 1e-4], [1, 2], ["pretrained", "random_init"])
        assert both["pretrained"] == [0.816, 0.8151] and both["random_init"] == [0.716, 0.7151]
        assert both["gain_points"] == 10.0
        calls.clear()
        alone = module.task_accuracies({}, [1e-3], [1], ["pretrained"])
    assert calls == [("pretrained", 1e-3, 1)]
    assert alone == {"seeds": [1], "learning_rates": [1e-3], "pretrained": [0.811]}
    with pytest.raises(flags.IllegalFlagValueError, match="sides.*must be pretrained, random_init or both"):
        module.FLAGS.sides = ["pretrained", "scratch"]


@pytest.mark.parametrize("name, message", [
    ("torch", "Unknown task 'torch' in --tasks: changelog_fix_or_add, or PACKAGE_or_PACKAGE"),
    ("torch_or_", "Unknown task 'torch_or_'"),
    ("numpy_or_torch", "--tasks=numpy_or_torch: numpy is in the pre-training corpus"),
    ("torch_or_json", "--tasks=torch_or_json: json is in the pre-training corpus"),  # the standard library
    ("torch_or_no_such_package", "--tasks=torch_or_no_such_package: no_such_package is not installed as a package"),
    ("torch_or_typing_extensions", "typing_extensions is not installed as a package folder"),  # one file, not read
])
def test_a_package_task_names_what_is_wrong_before_reading_any_package(benchmark, name, message):
    module, _ = benchmark
    with mock.patch.object(module, "builtin_documents") as read:
        with pytest.raises(ValueError, match=re.escape(message)):
            module.build_task(name)
    read.assert_not_called()


def test_a_standard_library_module_left_out_of_the_corpus_makes_a_package_task(benchmark):
    module, _ = benchmark
    with mock.patch.object(module, "builtin_documents", side_effect=RuntimeError("read")) as read:
        with pytest.raises(RuntimeError, match="read"):
            module.build_task("idlelib_or_torch")  # idlelib: a standard-library program, not in the corpus
    read.assert_called()
