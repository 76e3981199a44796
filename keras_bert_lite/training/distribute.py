"""A `tf.distribute` strategy from a flag, and the precision and XLA settings that suit its devices.

Example:

    >>> strategy = get_strategy("mirrored")          # all local GPUs (or the CPU)
    >>> strategy = get_strategy("tpu", tpu_address="local")   # on a Cloud TPU VM
    >>> keras.config.set_dtype_policy(precision_policy("auto", strategy))
    >>> with strategy.scope():
    ...     pretrainer = BertPretrainer(BertEncoder(config))
"""

from __future__ import annotations

import json
import os
import socket
import urllib.parse

import tensorflow as tf
from absl import logging

STRATEGIES = ("default", "one_device", "mirrored", "multi_worker", "tpu")
PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
JIT_SETTINGS = ("auto", "true", "false")

# Seconds to wait for a TCP connection to a remote TPU worker before giving up.
TPU_CONNECT_TIMEOUT = 10.0


def get_strategy(
    name: str,
    tpu_address: str | None = None,
    num_gpus: int | None = None,
    all_reduce: str = "auto",
) -> tf.distribute.Strategy:
    """Creates the distribution strategy called `name`.

    Create it first thing in the program (MultiWorkerMirroredStrategy and TPUs must be set up
    before any other TensorFlow op runs), then build models and optimizers in `strategy.scope()`.

    Args:
        name: one of `STRATEGIES`:
            "default": no distribution (TensorFlow's default strategy, one device).
            "one_device": OneDeviceStrategy on the first GPU, or the CPU when there is none.
            "mirrored": MirroredStrategy, synchronous data parallelism over local devices.
            "multi_worker": MultiWorkerMirroredStrategy over the cluster in TF_CONFIG (set on
                every worker; the worker with task index 0 is the chief).
            "tpu": TPUStrategy; the TPU is located, checked for reachability and initialised.
        tpu_address: for "tpu": a TPU name, "local" on a TPU VM, or "grpc://host:port".
        num_gpus: for "mirrored" and "one_device": how many local GPUs to use (default all).
        all_reduce: for "multi_worker": collective implementation, "auto", "ring" or "nccl".

    Returns:
        The strategy.

    Raises:
        ValueError: unknown `name`, a bad `num_gpus`/`all_reduce`, or a missing or malformed
            TF_CONFIG for "multi_worker".
        RuntimeError: for "tpu", when no TPU is named, reachable or found; raised before
            TensorFlow would hang or fail obscurely.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown distribution strategy {name!r}; expected one of {STRATEGIES}.")
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "tpu":
        return _tpu_strategy(tpu_address)
    if name == "multi_worker":
        return _multi_worker_strategy(all_reduce)
    gpus = [device.name for device in tf.config.list_logical_devices("GPU")]
    if num_gpus is not None:
        if not 0 <= num_gpus <= len(gpus):
            raise ValueError(f"num_gpus={num_gpus} but this machine has {len(gpus)} GPU(s).")
        gpus = gpus[:num_gpus]
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0] if gpus else "/cpu:0")
    strategy = tf.distribute.MirroredStrategy(devices=gpus or None)
    logging.info("MirroredStrategy over %s.", strategy.extended.worker_devices)
    return strategy


def precision_policy(setting: str, strategy: tf.distribute.Strategy) -> str:
    """The Keras dtype policy for `setting`, resolving "auto" from the strategy's devices.

    Args:
        setting: one of `PRECISIONS`; "auto" is mixed_bfloat16 on TPUs (their native type),
            mixed_float16 on GPUs (with loss scaling) and float32 on CPUs, where half precision
            is not faster.
        strategy: the strategy the model is built under.

    Returns:
        "float32", "mixed_float16" or "mixed_bfloat16".
    """
    if setting not in PRECISIONS:
        raise ValueError(f"Unknown precision {setting!r}; expected one of {PRECISIONS}.")
    if setting != "auto":
        return setting
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return "mixed_bfloat16"
    return "mixed_float16" if tf.config.list_logical_devices("GPU") else "float32"


def use_jit_compile(setting: str) -> bool:
    """Whether to XLA-compile the training step for `setting` ("auto": on GPUs only).

    TPUs always compile; on CPUs XLA measured no faster for BERT (benchmarks/pretraining.py).
    """
    if setting not in JIT_SETTINGS:
        raise ValueError(f"Unknown jit_compile setting {setting!r}; expected one of {JIT_SETTINGS}.")
    return setting == "true" or (setting == "auto" and bool(tf.config.list_logical_devices("GPU")))


def _multi_worker_strategy(all_reduce: str) -> tf.distribute.Strategy:
    """MultiWorkerMirroredStrategy, failing with a clear message first when TF_CONFIG cannot describe
    a multi-worker cluster."""
    if all_reduce not in ("auto", "ring", "nccl"):
        raise ValueError(f"all_reduce must be one of ('auto', 'ring', 'nccl'), got {all_reduce!r}.")
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise ValueError(
            'strategy "multi_worker" needs the TF_CONFIG environment variable on every worker, e.g. '
            '{"cluster": {"worker": ["host1:12345", "host2:12345"]}, "task": {"type": "worker", "index": 0}}.'
        )
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON ({e.msg} at column {e.colno}).") from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not cluster.get("worker"):
        raise ValueError('TF_CONFIG has no "cluster": {"worker": [...]} list.')
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        raise ValueError('TF_CONFIG has no "task": {"type": ..., "index": ...}.')
    members = cluster.get(task["type"])
    if not isinstance(members, list) or not 0 <= int(task["index"]) < len(members):
        raise ValueError(
            f"TF_CONFIG task {task['type']}:{task['index']} is not in the cluster {sorted(cluster)}."
        )
    implementation = getattr(tf.distribute.experimental.CommunicationImplementation, all_reduce.upper())
    options = tf.distribute.experimental.CommunicationOptions(implementation=implementation)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    logging.info("MultiWorkerMirroredStrategy: %d replicas, this is %s.", strategy.num_replicas_in_sync, raw)
    return strategy


def _tpu_strategy(tpu_address: str | None) -> tf.distribute.Strategy:
    tpu_address = tpu_address or os.environ.get("TPU_NAME", "")
    if not tpu_address:
        raise RuntimeError(
            'strategy "tpu" needs a TPU: pass --tpu=<TPU name>, --tpu=local on a TPU VM, '
            "or --tpu=grpc://host:8470 (or set TPU_NAME)."
        )
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address)
        master = resolver.master()
    except (ValueError, RuntimeError, OSError) as e:  # OSError: the Cloud TPU API is unreachable
        raise RuntimeError(f"Cannot locate TPU {tpu_address!r}: {e}") from None
    if master.startswith("grpc://"):
        url = urllib.parse.urlparse(master)
        try:  # a TCP connection to the TPU worker, so that an unreachable one fails now
            socket.create_connection((url.hostname, url.port or 8470), timeout=TPU_CONNECT_TIMEOUT).close()
        except OSError as e:
            raise RuntimeError(
                f"TPU {tpu_address!r} is not reachable at {url.hostname}:{url.port or 8470} ({e}); check the "
                "TPU name or address, that the TPU is running, and the network/firewall."
            ) from None
        tf.config.experimental_connect_to_cluster(resolver)
    try:
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (tf.errors.OpError, ValueError, RuntimeError) as e:
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise RuntimeError(f"No TPU found at {tpu_address!r}: initialising the TPU system failed ({reason}).") from None
    if not tf.config.list_logical_devices("TPU"):
        raise RuntimeError(f"No TPU found at {tpu_address!r}: the TPU system has no TPU devices.")
    strategy = tf.distribute.TPUStrategy(resolver)
    logging.info("TPUStrategy at %s with %d cores.", tpu_address, strategy.num_replicas_in_sync)
    return strategy
