"""Fixtures of the reliability tests: one good result file, and copies of it to (not) overwrite."""

import shutil
from pathlib import Path

import pytest
from reliability_helpers import QUICK, F

from pitstop.cli import main


@pytest.fixture(scope="session")
def good_json(tmp_path_factory) -> Path:
    """A real bench result of the 8-feature model (two variants)."""
    path = tmp_path_factory.mktemp("good") / "good.json"
    assert main(["bench", f"{F}:build", "--input", "float32[B,8]", "--variants", "eval+no_grad,eval+inference_mode",
                 *QUICK, "--json", str(path)]) == 0
    return path


@pytest.fixture
def result_file(good_json, tmp_path) -> Path:
    """A copy of the good result, to be (not) overwritten."""
    return Path(shutil.copy(good_json, tmp_path / "result.json"))
