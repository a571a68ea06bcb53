"""Fixtures of the reliability tests: one good result file, and copies of it to (not) overwrite."""

import shutil
import subprocess
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


@pytest.fixture
def immutable(tmp_path):
    """A folder nothing may change, root included (``chattr +i``: root ignores mode bits, not this
    attribute), holding an old recipe; skipped where the file system has no such attribute."""
    chattr = shutil.which("chattr")
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "recipe.py").write_text("# the old recipe\n")
    if chattr is None or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("no immutable attribute here (chattr +i)")
    yield folder
    subprocess.run([chattr, "-i", str(folder)], capture_output=True)


@pytest.fixture(scope="session")
def real_documents(good_json, tmp_path_factory) -> dict[str, Path]:
    """Real bench, train and profile documents of small runs (the property tests mangle them)."""
    import os
    import sys

    folder = tmp_path_factory.mktemp("real-docs")
    (folder / "t.py").write_text("import torch\nm = torch.nn.Linear(4, 2)\no = torch.optim.SGD(m.parameters(), 0.1)\n"
                                 "for _ in range(6):\n"
                                 "    o.zero_grad(); m(torch.randn(8, 4)).sum().backward(); o.step()\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    subprocess.run([sys.executable, "-m", "pitstop", "profile", "--json", "p.json", "--no-drill-down", "t.py"],
                   cwd=folder, env=env, check=True, capture_output=True, timeout=300)
    model = f"{Path(F).resolve()}:build"
    subprocess.run([sys.executable, "-m", "pitstop", "train", model, "--input", "float32[B,8]", "--target",
                    "int64[B]{0,4}", "--batch-size", "8", "--time-budget-s", "10", "--techniques", "zero_grad",
                    "--replicas", "1", "--json", "t.json"], cwd=folder, env=env, check=True, capture_output=True,
                   timeout=300)
    return {"bench": good_json, "train": folder / "t.json", "profile": folder / "p.json"}
