"""Real multi-device and multi-process runs of the pre-training loop (subprocesses)."""

import json
import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

JOBS = pathlib.Path(__file__).with_name("jobs.py")
TIMEOUT = 300


def _env(**extra) -> dict:
    env = {name: value for name, value in os.environ.items() if name != "TF_CONFIG"}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1", **extra)
    return env


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
@pytest.mark.subprocess
def test_mirrored_two_cpu_devices_matches_one_device(tmp_path):
    """Same seed, same global batches, dropout off: 6 AdamW steps with gradient clipping active."""
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, str(JOBS), "mirrored", str(out)], env=_env(),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(out.read_text())
    single, mirrored = results["single"], results["mirrored"]
    assert (single["replicas"], mirrored["replicas"]) == (1, 2)
    # Clipping is active (global norm > 1), so a per-replica clip would not match.
    assert min(single["gradient_norm"]) > 1.0
    np.testing.assert_allclose(mirrored["loss"], single["loss"], rtol=1e-5)
    for a, b in zip(single["weights"], mirrored["weights"]):
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=0, atol=1e-5)
    # Training moved the weights far more than the tolerance.
    assert max(np.abs(np.array(w)).max() for w in single["weights"]) > 0


@pytest.mark.slow
@pytest.mark.subprocess
def test_multi_worker_two_processes_end_with_identical_weights(tmp_path):
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    workers = []
    for index in range(2):
        config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        log = open(tmp_path / f"worker{index}.log", "w")
        workers.append((subprocess.Popen([sys.executable, str(JOBS), "worker", str(tmp_path)],
                                         env=_env(TF_CONFIG=config), stdout=log, stderr=subprocess.STDOUT), log))
    try:
        for process, _ in workers:
            process.wait(timeout=TIMEOUT)
    finally:
        for process, log in workers:
            if process.poll() is None:
                process.kill()
            log.close()
    for index, (process, _) in enumerate(workers):
        assert process.returncode == 0, (tmp_path / f"worker{index}.log").read_text()[-3000:]
    results = [json.loads((tmp_path / f"worker{i}.json").read_text()) for i in range(2)]
    assert [r["replicas"] for r in results] == [2, 2]
    assert [r["step"] for r in results] == [6, 6]
    assert results[0]["loss"] == results[1]["loss"]
    weights = [np.load(tmp_path / f"worker{i}.npz") for i in range(2)]
    for name in weights[0].files:
        np.testing.assert_array_equal(weights[0][name], weights[1][name], err_msg=name)
    # Only the chief keeps checkpoints; the other worker's scratch folder is gone.
    checkpoints = tmp_path / "model" / "checkpoints"
    assert sorted(p.name for p in checkpoints.glob("ckpt-*.index")) == ["ckpt-3.index", "ckpt-6.index"]
    assert not [p for p in checkpoints.iterdir() if p.name.startswith(".worker_")]
