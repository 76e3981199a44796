"""Strategies from a flag; the TPU branch fails fast and clearly on a machine without a TPU."""

import json
import socket
import time

import pytest
import tensorflow as tf

from keras_bert_lite.training.distribute import STRATEGIES, get_strategy, precision_policy, use_jit_compile


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "address, message",
    [
        (None, "needs a TPU"),
        ("local", "No TPU found at 'local'"),
        ("closed-port", "is not reachable"),
    ],
)
def test_tpu_fails_fast_with_a_clear_message(address, message, monkeypatch):
    if address == "closed-port":  # chosen at run time: parameters must be the same in every xdist worker
        address = f"grpc://127.0.0.1:{_closed_port()}"
    monkeypatch.delenv("TPU_NAME", raising=False)
    began = time.monotonic()
    with pytest.raises(RuntimeError, match=message):
        get_strategy("tpu", tpu_address=address)
    assert time.monotonic() - began < 30


def test_multi_worker_needs_a_valid_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="needs the TF_CONFIG"):
        get_strategy("multi_worker")
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        get_strategy("multi_worker")
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["127.0.0.1:1"]}}))
    with pytest.raises(ValueError, match='no "task"'):
        get_strategy("multi_worker")
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 3}}))
    with pytest.raises(ValueError, match="worker:3 is not in the cluster"):
        get_strategy("multi_worker")
    with pytest.raises(ValueError, match="all_reduce"):
        get_strategy("multi_worker", all_reduce="mpi")


def test_local_strategies():
    assert get_strategy("default") is tf.distribute.get_strategy()
    one = get_strategy("one_device")
    assert isinstance(one, tf.distribute.OneDeviceStrategy) and one.num_replicas_in_sync == 1
    mirrored = get_strategy("mirrored")
    assert isinstance(mirrored, tf.distribute.MirroredStrategy) and mirrored.num_replicas_in_sync >= 1
    with pytest.raises(ValueError, match="Unknown distribution strategy 'gpu'"):
        get_strategy("gpu")
    with pytest.raises(ValueError, match="num_gpus=64"):
        get_strategy("mirrored", num_gpus=64)
    assert set(STRATEGIES) == {"default", "one_device", "mirrored", "multi_worker", "tpu"}


def test_precision_and_xla_settings_resolve_from_the_devices():
    default = tf.distribute.get_strategy()
    assert precision_policy("auto", default) == "float32"  # this machine has no GPU or TPU
    assert precision_policy("mixed_bfloat16", default) == "mixed_bfloat16"
    assert use_jit_compile("auto") is False and use_jit_compile("true") is True
    with pytest.raises(ValueError, match="Unknown precision 'half'"):
        precision_policy("half", default)
    with pytest.raises(ValueError, match="Unknown jit_compile setting 'yes'"):
        use_jit_compile("yes")
