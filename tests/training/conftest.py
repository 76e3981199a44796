"""Shared helpers of the training tests: the tiny model and synthetic data of jobs.py; the main
job's modules (tpu/main_job_data.py, tpu/main_job_report.py) importable, as main_job.py imports
them, from the tpu folder, and one build of the main job's data for the tests that read it."""

import importlib.util
import pathlib
import sys

import pytest

TPU = str(pathlib.Path(__file__).resolve().parents[2] / "tpu")
if TPU not in sys.path:
    sys.path.insert(0, TPU)

import main_job_data  # noqa: E402  (from TPU)


@pytest.fixture(scope="session")
def jobs():
    """The jobs.py module (tiny_config, synthetic_examples, dataset_fn, build)."""
    spec = importlib.util.spec_from_file_location("training_jobs", pathlib.Path(__file__).with_name("jobs.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory) -> tuple:
    """(settings, `DemoData`): the main job's data of 60 built-in documents at sequence length 32 with
    a 300-token vocabulary learned from them, built once for test_main_job_data.py and
    test_main_job_report.py (which only read it)."""
    settings = main_job_data.DemoDataSettings(packages=(), max_documents=60, vocab_size=300, max_seq_length=32,
                                              max_predictions_per_seq=5, dupe_factor=1, num_shown=3)
    return settings, main_job_data.build_demo_data(str(tmp_path_factory.mktemp("demo")), settings, progress=False)
