"""Docs that cannot rot: every command line and Python snippet of README.md and docs/**/*.md is run
(or parsed, for configuration) by a test, or marked with the test that runs it, or marked as not
run with its reason; tests/docs/snippets.py reads the blocks and their markers.

In the default suite every ``pitstop`` command line is parsed by the real parser, the cheap ones
(lint, explain, gradcheck, compare, report) run, and so do the Python snippets that measure
nothing. The commands and snippets that measure (bench, optimize, train, memory, data, doctor,
profile) run with ``-m slow``, as written plus ``FAST[command]``, which only shortens budgets,
replicas and fidelity samples. They run in a folder holding the files the docs name
(``my_model.py:build``, ``my_data.py:make_dataset``, ...: ``WORKDIR``) and the pages' ``file``
blocks (``train.py``, the lint page's, with three mistakes). A ``text`` block marked ``output-of
COMMAND`` is compared with what that command prints there."""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from snippets import LANGUAGES, ROOT, Block, all_blocks, argv, command_lines, not_pitstop, readme_table_commands

from pitstop.cli import build_parser, main

BLOCKS = all_blocks()
# The blocks that are not run, each with its reason in the page. A new one changes this count.
SKIPPED = 8
CHEAP = {"lint", "explain", "gradcheck", "compare", "report"}
# Per command: options that only shorten the run (set, or replaced where the line gives them).
FAST: dict[str, dict[str, str | None]] = {
    "bench": {"--budget-s": "0.05", "--replicas": "1", "--inline": None},
    "optimize": {"--time-budget-s": "10", "--replicas": "1", "--fidelity-samples": "8", "--techniques": "threads"},
    "train": {"--time-budget-s": "60", "--replicas": "1"},
    "memory": {"--repeats": "1"},
    "data": {"--time-budget-s": "3", "--max-workers": "1", "--batches": "2"},
    "doctor": {}, "profile": {},
}
SLOW_API = [(r"\btime_budget_s=\d+", "time_budget_s=10"), (r"\bbudget_s=\d+", "budget_s=0.1")]
# The same for the Python API: keyword options of the measuring functions, set whatever a snippet says.
FAST_API = {"bench": {"budget_s": 0.1, "replicas": 1, "isolate": False},
            "optimize": {"time_budget_s": 10, "replicas": 1, "fidelity_samples": 8, "techniques": ["threads"]}}


class _FastPitstop:
    """``pitstop`` for a measuring snippet: its ``bench`` and ``optimize`` take FAST_API's options."""

    def __getattr__(self, name: str):
        import pitstop

        function = getattr(pitstop, name)
        if name not in FAST_API:
            return function
        return lambda *args, **kwargs: function(*args, **{**kwargs, **FAST_API[name]})

MODEL_PY = """\
import torch
from torch import nn


class Any(nn.Module):
    \"\"\"Takes any input shape and dtype of the docs' specs; 10 classes.\"\"\"

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(nn.Sequential(nn.Linear(1, 16), nn.ReLU()), nn.Sequential(nn.Linear(16, 10)))

    def forward(self, x):
        return self.blocks(x.float().flatten(1).mean(1, keepdim=True))


def build():
    return Any()


make = build
"""
DATA_PY = """\
import torch
from torch.utils.data import TensorDataset


def make_dataset():
    return TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))
"""
OPS_PY = """\
import torch


def my_function(x, w=None):
    return torch.tanh(x if w is None else x * w).pow(2).sum(-1)
"""
LM_PY = """\
from transformers import GPT2Config, GPT2LMHeadModel


def build():
    return GPT2LMHeadModel(GPT2Config(vocab_size=512, n_positions=1024, n_embd=32, n_layer=1, n_head=2,
                                      bos_token_id=511, eos_token_id=511))
"""
WORKDIR = {"src/model.py": "import torch\n", "my_model.py": MODEL_PY, "my_lm.py": LM_PY,
           "pkg/__init__.py": "", "pkg/models.py": "from my_model import make  # noqa: F401\n",
           "my_data.py": DATA_PY, "my_ops.py": OPS_PY}


def _result(variant_ms: dict[str, float]) -> dict:
    """A minimal bench result that `compare` and `report` accept."""
    rows = [{"variant": v, "batch_size": 1, "status": "ok", "config": {},
             "latency_ms": {"median": ms, "p10": ms, "p90": ms, "ci95": [ms, ms], "n": 8},
             "samples_ms": [ms * (1 + k / 100) for k in range(8)]} for v, ms in variant_ms.items()]
    return {"pitstop": "0", "schema": 1, "kind": "bench", "environment": {}, "model": "zoo:mlp", "inputs": {"1": "x"},
            "settings": {}, "baseline": "train+grad", "complete": True, "interrupted": False, "results": rows,
            "claims": [], "advice": ""}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("docs-workdir")
    for name, text in WORKDIR.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    files = [b for b in BLOCKS if b.kind == "file"]
    assert "train.py" in {b.arg for b in files}
    for b in files:
        (folder / b.arg).write_text(b.text)
    before, after = _result({"train+grad": 2.0, "eval+no_grad": 1.5}), _result({"train+grad": 2.0, "eval+no_grad": 1.4})
    (folder / "before.json").write_text(json.dumps(before))
    (folder / "after.json").write_text(json.dumps(after))
    (folder / "result.json").write_text(json.dumps(after))
    return folder


@pytest.fixture
def workdir(template, tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "w"
    shutil.copytree(template, folder)
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    return folder


def _commands() -> list[tuple[str, str]]:
    """(where, command line) of every runnable block and of the README's table."""
    found = [(b.id, line) for b in BLOCKS if b.lang in ("bash", "text") and b.kind in ("run", "tested-by")
             for line in command_lines(b)]
    return found + [("README.md table", line) for line in readme_table_commands()]


COMMANDS = _commands()
OWN = [(where, line) for (where, line) in COMMANDS if not any(
    b.id == where and b.kind == "tested-by" for b in BLOCKS)]  # run here, not by a command's own tests


def _fast(args: list[str]) -> list[str]:
    args = list(args)
    generate = "--generate" in args  # bench --generate runs in workers (no --inline)
    for flag, value in FAST.get(args[0], {}).items():
        if generate and flag == "--inline":
            continue
        if flag in args:
            if value is not None:
                args[args.index(flag) + 1] = value
        else:
            args[1:1] = [flag] if value is None else [flag, value]  # before a script's own arguments
    return args


def _python_namespace() -> dict:
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    import pitstop

    model = nn.Sequential(nn.Sequential(nn.Linear(16, 32), nn.ReLU()), nn.Sequential(nn.Linear(32, 32), nn.ReLU()),
                          nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dataset = TensorDataset(torch.randn(256, 16), torch.randn(256, 4))
    loader = DataLoader(dataset, batch_size=32)

    def train_step(batch):
        x, y = batch
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    def train():
        for batch in loader:
            train_step(batch)

    def pad_collate(batch):
        return torch.utils.data.default_collate(batch)

    return {"pitstop": pitstop, "torch": torch, "nn": nn, "model": model, "example_inputs": (torch.randn(8, 16),),
            "x": torch.randn(8, 16), "w": torch.randn(16, 4), "fn": lambda x, w: torch.tanh(x @ w),
            "dataset": dataset, "loader": loader, "train": train, "train_step": train_step,
            "lengths": [int(n) for n in torch.randint(1, 64, (256,))], "pad_collate": pad_collate}


def _run_python(block: Block, slow: bool) -> None:
    code, scope = block.text, _python_namespace()
    if slow:
        for pattern, repl in SLOW_API:
            code = re.sub(pattern, repl, code)
        code = re.sub(r"^import pitstop$", "pass  # pitstop: _FastPitstop", code, flags=re.M)
        scope["pitstop"] = _FastPitstop()
    exec(compile(code, block.id, "exec"), scope)


# ---- every block is accounted for ------------------------------------------------------------


def test_every_block_is_classified():
    for b in BLOCKS:
        assert b.lang in LANGUAGES, f"{b.id}: a fence needs a language of {sorted(LANGUAGES)}, got {b.lang!r}"
        kinds = {"run", "skip", "tested-by", "slow", "file", "output-of"}
        assert b.kind in kinds, f"{b.id}: unknown marker {b.kind!r}"
        if b.lang == "json":
            assert b.kind == "skip", f"{b.id}: a JSON excerpt is marked skip with its reason"
        if b.lang == "python":
            ast.parse(b.text)  # even a skipped snippet must be Python
        if b.lang == "bash" and b.kind != "skip":
            for line in command_lines(b):
                argv(line)  # only pitstop commands, or the block says why it is not run
        if b.kind in ("skip", "slow"):
            assert len(b.arg) > 20, f"{b.id}: say why it is not run"


def test_the_blocks_not_run_are_counted():
    skipped = [f"{b.id}: {b.arg}" for b in BLOCKS if b.kind == "skip"]
    assert len(skipped) == SKIPPED, "a block marked skip was added or removed:\n" + "\n".join(skipped)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "tested-by"], ids=lambda b: b.id)
def test_a_tested_by_marker_names_a_test_that_reads_its_page(block):
    path, _, name = block.arg.partition("::")
    source = (ROOT / path).read_text()
    assert re.search(rf"^def {name}\(", source, re.M), f"{block.id}: {block.arg} does not exist"
    reads = f"{block.generated.upper()}_EPILOG" if block.generated else block.page  # --help's examples, or the page
    assert reads in source, f"{block.id}: {path} does not read {reads}"


def test_a_help_examples_block_shows_other_commands_only_where_the_commands_tests_run_them():
    other = {b.generated: [line.split("   #")[0] for line in not_pitstop(b)] for b in BLOCKS if b.generated}
    assert {k: v for k, v in other.items() if v} == {
        "train": ["git apply speedup.diff"], "doctor": ["torchrun --nproc-per-node 2 -m pitstop doctor train.py"]}
    assert all(b.kind == "tested-by" for b in BLOCKS if b.generated in ("train", "doctor"))


def test_the_readme_has_a_command_for_every_subcommand_and_stays_short():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    shown = {line.split()[1] for line in readme_table_commands()}
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert shown == set(sub.choices)


# ---- command lines ---------------------------------------------------------------------------


@pytest.mark.parametrize(("where", "line"), COMMANDS, ids=[f"{w} {line[:60]}" for w, line in COMMANDS])
def test_every_command_line_parses(where, line):
    args, _ = argv(line)
    try:
        parsed = build_parser().parse_args(args)
    except SystemExit as exc:
        pytest.fail(f"{where}: `{line}` does not parse (exit {exc.code})")
    assert getattr(parsed, "func", None) is not None


def _run(line: str, capture) -> tuple[int, str, str]:
    """Run a command line as the docs write it, plus FAST; (exit code, stdout, stderr)."""
    args, out = argv(line)
    rc = main(_fast(args))
    text, err = capture.readouterr()
    if out:
        Path(out).write_text(text)
    return rc, text, err


_DISTINCT = list({tuple(argv(line)[0]): (w, line) for (w, line) in reversed(OWN)}.values())[::-1]  # run once each
CHEAP_RUNS = [(w, line) for (w, line) in _DISTINCT if argv(line)[0][0] in CHEAP]
MEASURING_RUNS = [(w, line) for (w, line) in _DISTINCT if argv(line)[0][0] not in CHEAP]


@pytest.mark.parametrize(("where", "line"), CHEAP_RUNS, ids=[f"{w} {line[:60]}" for w, line in CHEAP_RUNS])
def test_a_cheap_command_runs(where, line, workdir, capsys):
    rc, _, err = _run(line, capsys)
    assert rc in (0, 1), f"{where}: `{line}` exited {rc}: {err[-2000:]}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "output-of"], ids=lambda b: b.id)
def test_an_output_block_is_what_its_command_prints(block, workdir, capfd):
    """Exactly, but for the spaces at the ends of lines (a table is padded to the console's width)."""
    assert block.lang == "text"
    _, out, _ = _run(block.arg, capfd)  # capfd: a script's own output comes from its process
    assert [line.rstrip() for line in out.splitlines()] == block.text.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize(("where", "line"), MEASURING_RUNS, ids=[f"{w} {line[:60]}" for w, line in MEASURING_RUNS])
def test_a_measuring_command_runs(where, line, workdir, capsys):
    rc, _, err = _run(line, capsys)
    assert rc in (0, 1), f"{where}: `{' '.join(_fast(argv(line)[0]))}` exited {rc}: {err[-2000:]}"


# ---- Python and configuration ----------------------------------------------------------------

PYTHON = [b for b in BLOCKS if b.lang == "python" and b.kind in ("run", "file")]
SLOW_PYTHON = [b for b in BLOCKS if b.lang == "python" and b.kind == "slow"]


@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.id)
def test_a_python_snippet_runs(block, workdir):
    _run_python(block, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("block", SLOW_PYTHON, ids=lambda b: b.id)
def test_a_measuring_python_snippet_runs(block, workdir):
    _run_python(block, slow=True)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang in ("toml", "yaml") and b.kind == "run"],
                         ids=lambda b: b.id)
def test_a_configuration_snippet_is_read_by_pitstop(block, tmp_path):
    if block.lang == "toml":
        assert "tool" in tomllib.loads(block.text)
        (tmp_path / "pyproject.toml").write_text(block.text)
        from pitstop.lint.config import load_config

        load_config(tmp_path)
    else:
        hooks = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
        for repo in yaml.safe_load(block.text):
            assert {h["id"] for h in repo["hooks"]} <= hooks
