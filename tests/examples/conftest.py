"""Fixtures of the example scripts' tests."""

import importlib.util
import pathlib
import sys

import pytest


def scripts_module():
    """tests/examples/scripts.py (in-process script runs), one module for the whole session."""
    name = "script_test_helpers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, pathlib.Path(__file__).with_name("scripts.py"))
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


@pytest.fixture(scope="session")
def scripts():
    return scripts_module()
