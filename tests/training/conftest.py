"""Shared helpers of the training tests: the tiny model and synthetic data of jobs.py; the main
job's modules (tpu/main_job_data.py, tpu/main_job_report.py) importable, as pretrain.py imports
them, from the tpu folder."""

import importlib.util
import pathlib
import sys

import pytest

TPU = str(pathlib.Path(__file__).resolve().parents[2] / "tpu")
if TPU not in sys.path:
    sys.path.insert(0, TPU)


@pytest.fixture(scope="session")
def jobs():
    """The jobs.py module (tiny_config, synthetic_examples, dataset_fn, build)."""
    spec = importlib.util.spec_from_file_location("training_jobs", pathlib.Path(__file__).with_name("jobs.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
