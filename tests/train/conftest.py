"""Fixtures of the train tests."""

import pytest
from train_helpers import MODELS


@pytest.fixture
def models_file() -> str:
    """Path of the small models file, for specs like f"{models_file}:cnn"."""
    return MODELS
