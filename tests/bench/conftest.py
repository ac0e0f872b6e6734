"""The benchmarks' data checks read files only: no model, no database."""

import pytest


@pytest.fixture(autouse=True)
def _model_loaded_once():
    """Overrides tests/conftest.py's: these tests never load the model."""
    yield
