"""Real runs through ``python -m pitstop doctor``: what issue 17 found missing on real scripts
(end-of-run findings, early explosion warnings, per-optimizer histories, ``__file__``, what was
and was not watched, options after the script path) and issue 18's doctor items."""

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def doctor(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-m", "pitstop", "doctor", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def write(tmp_path, source, name="train.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def report(tmp_path, source, *options):
    path = write(tmp_path, source)
    out = doctor("--json", tmp_path / "r.json", "--fail-on", "never", *options, path.name, cwd=tmp_path)
    assert (tmp_path / "r.json").exists(), out.stderr[-3000:]
    return json.loads((tmp_path / "r.json").read_text()), out


DEAD = """
import torch
from torch import nn


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    with torch.no_grad():
        model[0].bias.fill_(-100.0)  # the hidden ReLU is dead from the first step
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(20):
        opt.zero_grad()
        nn.functional.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 1)).backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_end_of_run_findings_survive_the_scripts_namespace(tmp_path):
    doc, _ = report(tmp_path, DEAD)
    found = {f["code"]: f for f in doc["findings"]}
    assert set(found) == {"PIT105", "PIT108"}
    assert found["PIT108"]["where"] == "model.1" and "model.0.weight" in found["PIT105"]["message"]


EXPLODING = """
import torch
from torch import nn

torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [nn.Linear(32, 32), nn.Tanh()]
model = nn.Sequential(*layers, nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=3.0)  # far too high: norms 0.6, 13, 4e3, 2e5 ... inf at step 11
x, y = torch.randn(64, 32), torch.randn(64, 1)
for step in range(14):
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
"""


def test_pit107_warns_while_the_gradient_norm_grows_before_anything_is_non_finite(tmp_path):
    doc, _ = report(tmp_path, EXPLODING)
    first = {}
    for f in doc["findings"]:
        first[f["code"]] = min(first.get(f["code"], 99), f["step"])
    assert first["PIT107"] == 4 and first["PIT106"] == 11
    explosion = next(f for f in doc["findings"] if f["code"] == "PIT107")
    assert "exploding" in explosion["message"]
    finite_norms = [v for s, v in doc["timeline"]["grad_norm"] if s <= first["PIT107"]]
    assert all(v is not None for v in finite_norms)


LAYERWISE = """
import torch
from torch import nn

torch.manual_seed(0)
layers = [nn.Linear(8, 8), nn.Linear(8, 8)]
opts = [torch.optim.SGD(layer.parameters(), lr=1e-6) for layer in layers]
for scale, layer, opt in zip((1.0, 1e4), layers, opts):  # layer by layer, as forward-forward trains
    for _ in range(30):
        opt.zero_grad()
        (layer(torch.randn(16, 8)).pow(2).mean() * scale).backward()  # the second layer's gradients are 1e4x
        opt.step()
"""


def test_pit107_keeps_one_history_per_optimizer_and_the_summary_counts_all_of_them(tmp_path):
    doc, out = report(tmp_path, LAYERWISE)
    assert doc["findings"] == []
    assert doc["watched"]["optimizers"] == 2 and doc["watched"]["optimizer_steps"] == 60
    assert "60 optimizer steps of 2 optimizers (at most 30 each)" in out.stdout


def test_file_is_absolute_so_a_script_that_changes_directory_finds_its_files(tmp_path):
    (tmp_path / "vocab.txt").write_text("hello")
    source = """
    import os
    here = os.path.dirname(__file__)
    os.chdir(os.path.dirname(here))
    print("read", open(os.path.join(here, "vocab.txt")).read())
    """
    path = write(tmp_path, source)
    out = doctor(path.name, cwd=tmp_path)
    assert out.returncode == 0 and "read hello" in out.stdout, out.stderr[-2000:]


MANUAL = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
total = 0
for _ in range(12):
    model.zero_grad()
    loss = nn.functional.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 1))
    loss.backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-0.01)  # SGD by hand, as the word-language-model example does
    total {op}
"""


def test_manual_parameter_updates_are_counted_as_steps_and_checked(tmp_path):
    doc, out = report(tmp_path, MANUAL.format(op="+= loss.item()"))
    assert doc["steps"] == 12 and doc["watched"]["manual_steps"] == 12 and doc["findings"] == []
    assert "12 step(s) of parameters updated by hand" in out.stdout and "PIT105" in out.stdout
    doc, _ = report(tmp_path, MANUAL.format(op="+= loss  # keeps every graph"))
    assert [f["code"] for f in doc["findings"]] == ["PIT102"]


HOGWILD = """
import torch
import torch.multiprocessing as mp
from torch import nn


def train(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(4, 8)).pow(2).mean().backward()
        opt.step()


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    model = nn.Linear(8, 1)
    model.share_memory()
    workers = [mp.Process(target=train, args=(model,)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
"""


def test_training_in_spawned_workers_is_reported_as_not_watched(tmp_path):
    doc, out = report(tmp_path, HOGWILD)
    assert doc["exit"] == {"status": "ok"} and doc["steps"] == 0
    assert doc["watched"]["not_watched"] and "2 worker process(es) running `train`" in out.stdout
    assert "not watched" in out.stdout and "spawn" in out.stdout


ARGV = """
import sys
print("argv", sys.argv[1:])
sys.exit(3 if "--fail" in sys.argv else 0)
"""


def test_options_after_the_script_path_are_pitstops_and_double_dash_separates(tmp_path, example_runs):
    # the documented examples' runs (the script prints its argv): --json and --fail-on after the path are
    # pitstop's, an unknown option is the script's, and after `--` everything is the script's
    tmp, out = example_runs["pitstop doctor train.py --json report.json --fail-on error"]
    assert out.returncode == 1 and "argv []" in out.stdout
    assert json.loads((tmp / "report.json").read_text())["kind"] == "doctor"
    assert "argv ['--epochs', '3']" in example_runs["pitstop doctor train.py --epochs 3"][1].stdout
    tmp, out = example_runs["pitstop doctor train.py --epochs 3 -- --json x"]
    assert "argv ['--epochs', '3', '--json', 'x']" in out.stdout and not (tmp / "x").exists()
    # a flag after the path is pitstop's too, and the script's own exit code passes through
    path = write(tmp_path, ARGV)
    out = doctor(path, "--epochs", "3", "--guard", "--", "--json", "x.json", "--fail", cwd=tmp_path)
    assert out.returncode == 3 and "argv ['--epochs', '3', '--json', 'x.json', '--fail']" in out.stdout
    assert not (tmp_path / "x.json").exists()


ARGPARSE = 'import argparse\nargparse.ArgumentParser().add_argument("--json")\n'


@pytest.fixture(scope="module")
def argparse_run(tmp_path_factory):
    """One run of a script that defines --json itself, with pitstop's --json before its path and
    --select/--ignore given: the ambiguity, the code lists and the report's file mode assert on it."""
    tmp = tmp_path_factory.mktemp("argparse")
    doc, out = report(tmp, ARGPARSE, "--select", "stale-gradients,PIT10", "--ignore", "PIT402")
    return tmp, doc, out


def test_an_option_the_script_also_defines_is_ambiguous_after_its_path(tmp_path, argparse_run):
    path = write(tmp_path, ARGPARSE)
    out = doctor(path, "--json", "r.json", cwd=tmp_path)
    assert out.returncode == 2 and "ambiguous" in out.stderr and "`--`" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    _, doc, out = argparse_run  # before the path it is pitstop's
    assert out.returncode == 0 and doc["kind"] == "doctor"


def examples():
    """Every `pitstop doctor` command in --help's epilog, which docs/commands/doctor.md shows as its
    examples (<!-- pitstop-examples doctor -->)."""
    from pitstop.cli.doctor import DOCTOR_EPILOG

    lines = [line.strip() for line in DOCTOR_EPILOG.splitlines()]
    return sorted({re.split(r"\s{2,}|\s+#", line)[0] for line in lines if line.startswith("pitstop doctor ")})


EXAMPLE_SCRIPT = """
import sys
import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(2, 4)).pow(2).mean().backward()
    opt.step()  # no zero_grad: PIT101, so --fail-on error exits 1
print("argv", sys.argv[1:])
"""


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory):
    """Each documented example run once, in a folder of its own: {example: (folder, process)}."""
    runs = {}
    for example in examples():
        tmp = tmp_path_factory.mktemp("example")
        write(tmp, EXAMPLE_SCRIPT)
        runs[example] = tmp, doctor(*example.split()[2:], cwd=tmp)
    return runs


@pytest.mark.parametrize("example", examples())
def test_every_documented_example_runs(example, example_runs):
    tmp_path, out = example_runs[example]
    args = example.split()[2:]
    assert out.returncode in (0, 1), out.stderr[-2000:]
    assert "PIT101" in out.stdout and "Traceback" not in out.stderr
    ours = args[:args.index("--")] if "--" in args else args
    for flag in ("--json", "--html"):
        if flag in ours:
            assert (tmp_path / args[args.index(flag) + 1]).stat().st_size > 0
    if "--fail-on" in args:
        assert out.returncode == 1
    if "--" in args:
        assert f"argv {args[args.index('train.py') + 1:args.index('--')] + args[args.index('--') + 1:]}" \
            in out.stdout


def test_output_paths_are_checked_before_the_script_runs(tmp_path):
    path = write(tmp_path, "open('ran', 'w').write('yes')\n")
    (tmp_path / "adir").mkdir()
    for flag in ("--json", "--html"):
        out = doctor(flag, tmp_path / "adir", path, cwd=tmp_path)
        assert out.returncode == 2 and flag in out.stderr and "directory" in out.stderr
        assert not (tmp_path / "ran").exists()


def test_select_and_ignore_reject_unknown_codes_listing_the_valid_ones(tmp_path):
    path = write(tmp_path, "pass\n")
    for flag in ("--select", "--ignore"):
        out = doctor(flag, "PIT999", path, cwd=tmp_path)
        assert out.returncode == 2 and "PIT999" in out.stderr and "PIT101" in out.stderr and "PIT402" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_select_and_ignore_take_names_and_code_prefixes(argparse_run):
    _, doc, out = argparse_run  # run with --select stale-gradients,PIT10 --ignore PIT402
    assert out.returncode == 0 and doc["kind"] == "doctor", out.stderr[-2000:]


def test_an_interrupted_run_says_what_happened(tmp_path):
    source = """
    import torch
    from torch import nn
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        opt.zero_grad()
        model(torch.randn(2, 4)).pow(2).mean().backward()
        opt.step()
        if step == 2:
            raise KeyboardInterrupt  # as Ctrl-C does
    """
    doc, out = report(tmp_path, source)
    assert out.returncode == 130
    line = next(line for line in out.stdout.splitlines() if "interrupted" in line)
    assert "interrupted by KeyboardInterrupt (Ctrl-C) at train.py:11 after 3 optimizer step(s)" in line
    assert doc["exit"]["status"] == "interrupted" and doc["exit"]["where"].endswith("train.py:11")


def test_the_json_report_gets_the_usual_file_mode(argparse_run):
    tmp_path, _, _ = argparse_run
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o666 & ~umask


def test_help_lists_every_run_time_code_from_the_table():
    from pitstop.cli import build_parser
    from pitstop.codes import CODES

    parser = build_parser()
    doctor = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "doctor")[1]
    text = " ".join(doctor.format_help().split())
    for c in CODES.values():
        assert (f"{c.code} {c.name}" in text) == ("R" in c.kinds), c.code
