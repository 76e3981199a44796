"""Shared helpers of the training tests: the tiny model and synthetic data of jobs.py."""

import importlib.util
import pathlib
import sys

import pytest


@pytest.fixture(scope="session")
def jobs():
    """The jobs.py module (tiny_config, synthetic_examples, dataset_fn, build)."""
    spec = importlib.util.spec_from_file_location("training_jobs", pathlib.Path(__file__).with_name("jobs.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
