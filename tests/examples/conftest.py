"""Fixtures of the example scripts' tests."""

import pytest

from tests.examples import scripts as scripts_module


@pytest.fixture(scope="session")
def scripts():
    """tests/examples/scripts.py: in-process script runs."""
    return scripts_module
