"""Fixtures of the train tests."""

import pytest
from train_helpers import MODELS


@pytest.fixture
def models_file() -> str:
    """Path of the small models file, for specs like f"{models_file}:cnn"."""
    return MODELS


@pytest.fixture
def search():
    """A train search of a tiny model whose stages a test fills in (no worker is started)."""
    import torch
    from torch import nn

    from pitstop.engine.source import make_source
    from pitstop.train.problem import ProblemRequest
    from pitstop.train.search import TrainSearch
    from pitstop.train.settings import TrainSettings
    from pitstop.train.variants import TrainTarget

    model = nn.Sequential(nn.Linear(8, 4))
    source = make_source(model, (torch.randn(8, 8),), 0)
    found = TrainSearch(source, TrainSettings(batch_size=8, threads=2), ProblemRequest(target=torch.zeros(8)), {})
    found.group.target = TrainTarget(batch_size=8)  # what the inspection would have found
    yield found
    found.group.close()
