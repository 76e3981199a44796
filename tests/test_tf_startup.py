"""tf_startup: without an NVIDIA driver, a program that imports keras_bert_lite before TensorFlow
registers no GPU device type, so TensorFlow logs no failed cuInit call; a user's setting wins."""

import ctypes
import os
import subprocess
import sys

import pytest

from keras_bert_lite import tf_startup

PROBE = (
    "import os, keras_bert_lite, tensorflow as tf; tf.constant(1) + 1; "
    "print(os.environ.get('TF_ENABLED_DEVICE_TYPES'))"
)


def _driver_present() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def _run(env_updates: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLED_DEVICE_TYPES"}
    env.update(env_updates, TF_CPP_MIN_LOG_LEVEL="0")
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300,
                          check=True)


def test_driver_check_agrees_with_the_driver_library():
    assert tf_startup.cuda_driver_missing() is (sys.platform.startswith("linux") and not _driver_present())


@pytest.mark.slow
@pytest.mark.skipif(not tf_startup.cuda_driver_missing(), reason="an NVIDIA driver is installed here")
def test_importing_the_package_first_skips_the_gpu_probe():
    result = _run({})
    assert result.stdout.strip() == tf_startup.DRIVERLESS_DEVICE_TYPES
    assert "cuInit" not in result.stderr, result.stderr[-2000:]


@pytest.mark.slow
def test_a_user_setting_wins():
    assert _run({"TF_ENABLED_DEVICE_TYPES": "CPU"}).stdout.strip() == "CPU"


def test_nothing_changes_once_tensorflow_is_loaded(monkeypatch):
    import tensorflow  # noqa: F401 - loaded, as in this test process

    monkeypatch.delenv("TF_ENABLED_DEVICE_TYPES", raising=False)
    tf_startup.skip_gpu_probe_without_driver()
    assert "TF_ENABLED_DEVICE_TYPES" not in os.environ
