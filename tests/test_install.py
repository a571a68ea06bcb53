"""The install path: ``python -m build`` makes a wheel, and that wheel, installed into a fresh venv,
gives a working ``pitstop`` command.

The venv gets pitstop from the wheel only (``--no-deps``, no index); its dependencies (torch,
numpy, rich) come from the environment running the tests, through a ``.pth`` file naming that
environment's site-packages. So the test needs no network and no second copy of torch, and
still proves the wheel holds everything pitstop needs: a module missing from the wheel fails,
because a ``.pth`` line adds a directory without running its own ``.pth`` files, so an
editable install of pitstop in the running environment is not seen."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import pitstop

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _build_wheel(tmp: Path) -> Path:
    """``python -m build --wheel`` on a copy of the sources (the checkout stays clean)."""
    tree = tmp / "checkout"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    isolation = ["--no-isolation"] if _have_build_requirements() else []  # else build installs them apart
    _run([sys.executable, "-m", "build", "--wheel", *isolation, "--outdir", str(tmp / "dist"), str(tree)], 300)
    (wheel,) = (tmp / "dist").glob("pitstop-*.whl")
    return wheel


def _have_build_requirements() -> bool:
    """Whether this environment satisfies ``[build-system] requires`` (a Python 3.12+ venv has no
    setuptools, 3.11's may have an old one)."""
    from packaging.requirements import Requirement

    for line in tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]:
        req = Requirement(line)
        try:
            if not req.specifier.contains(importlib.metadata.version(req.name), prereleases=True):
                return False
        except importlib.metadata.PackageNotFoundError:
            return False
    return True


def _fresh_venv(tmp: Path) -> Path:
    """A venv with no pitstop whose imports fall back to this environment's site-packages."""
    env = tmp / "venv"
    venv.create(env, with_pip=False, symlinks=os.name != "nt")
    python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], 60)
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib.stdout.strip()) / "pitstop_test_deps.pth").write_text("\n".join(ours) + "\n")
    return python


def test_the_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    wheel = _build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "pitstop/py.typed" in names and "pitstop/cli/__init__.py" in names
    assert not [n for n in names if n.startswith("tests/")]
    _assert_metadata_declares_what_pitstop_needs(wheel)
    python = _fresh_venv(tmp_path)
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)], 300)

    where = _run([str(python), "-c", "import pitstop; print(pitstop.__file__)"], 60, cwd=tmp_path).stdout
    assert Path(where.strip()).is_relative_to(tmp_path / "venv"), f"pitstop came from {where}, not the wheel"
    bindir = python.parent
    version = _run([str(bindir / "pitstop"), "--version"], 60, cwd=tmp_path)
    assert version.stdout.strip() == f"pitstop {pitstop.__version__}"
    # one variant in one worker proves the installed package starts and feeds its workers; more would only repeat it
    bench = _run([str(bindir / "pitstop"), "bench", "zoo:mlp", "--batch-sizes", "1", "--budget-s", "0.3",
                  "--variants", "eval+inference_mode", "--replicas", "1", "--threads", "1"], 600, cwd=tmp_path)
    assert "eval+inference_mode" in bench.stdout


def _assert_metadata_declares_what_pitstop_needs(wheel: Path) -> None:
    """The wheel's METADATA (what pip resolves from, with --no-deps left out) names pitstop's
    run-time dependencies and every extra with its packages."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        lines = z.read(meta).decode().splitlines()
    requires = [Requirement(v.split(":", 1)[1].strip()) for v in lines if v.startswith("Requires-Dist:")]
    plain = {r.name for r in requires if r.marker is None}
    assert {"torch", "numpy", "rich"} <= plain, plain
    extras = {v.split(":", 1)[1].strip() for v in lines if v.startswith("Provides-Extra:")}
    assert {"zoo", "onnx", "quant", "lightning", "all"} <= extras, extras
    by_extra = {e: {r.name for r in requires if r.marker is not None and r.marker.evaluate({"extra": e})}
                for e in ("zoo", "onnx", "lightning")}
    assert "transformers" in by_extra["zoo"] and "onnxruntime" in by_extra["onnx"]
    assert "lightning" in by_extra["lightning"]


@pytest.mark.parametrize("extra", ["zoo", "onnx", "quant", "lightning", "all", "docs", "dev"])
def test_the_extras_are_declared(extra):
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extra in extras
    if extra == "all":  # everything a user may need, no dev or docs tools
        assert extras["all"] == ["pitstop[zoo,onnx,quant,lightning]"]
