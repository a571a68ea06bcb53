"""Issue 44, as units (no worker is started): the planned run length and where it is read
(``planned_steps``; the loop bounds of live frames, ``loop_bound``), one-time costs against it
(compilation, a loader's worker start-up: ``decide``), the loader variants planned for a script's
training DataLoader and their edits, and why a dataset cannot go to worker processes."""

from __future__ import annotations

import sys
from argparse import Namespace

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from pitstop.errors import UsageError
from pitstop.train.config import NAIVE_NAME
from pitstop.train.script import edits
from pitstop.train.script.loaders import not_to_workers as _not_to_workers
from pitstop.train.script.run_length import Unknown, loop_bound
from pitstop.train.winner import planned_steps
from tests.fixtures.train_names import parse_train_variant
from tests.train.test_train_search import stage

LOADER = {"id": 1, "site": {"file": "train.py", "line": 5, "function": "main", "first_line": 1},
          "keywords": ["batch_size"], "positional": 1, "num_workers": 0, "persistent_workers": False,
          "pin_memory": False, "prefetch_factor": None, "batch_size": 16, "batches": 40, "dataset": "Decoded",
          "start_method": "fork", "draws_random": True, "cannot_use_workers": None}


def _loader(**fields):
    return {**LOADER, **fields}


def found(**loader):
    return {"script": "train.py", "sites": {"loaders": [{**LOADER, **loader}], "train_loader": 0},
            "trainers": [], "run_length": {"steps": None, "source": "the loop at line 9 can end early (a break)"}}


# -- the planned run length ------------------------------------------------------------------


def test_the_run_length_comes_from_steps_then_the_scripts_end_then_its_loops(search):
    search.outcome.stages = [stage("final", {NAIVE_NAME: 100.0})]
    search.group.found = found()
    assert planned_steps(search) == (None, "the loop at line 9 can end early (a break)")
    search.group.found["run_length"] = {"steps": 120, "source": "the loop bounds: ..."}
    assert planned_steps(search) == (120, "the loop bounds: ...")
    naive = search.outcome.stages[0].result.row(NAIVE_NAME, 8)
    naive.details = {"timed_until_the_script_ended": 57}  # measured: it outranks what the loops say
    assert planned_steps(search) == (57, "the unmodified script's own end, reached while it was timed")
    search.group.settings = search.group.settings.__class__(batch_size=8, threads=2, steps=5000)
    assert planned_steps(search) == (5000, "--steps")


def test_a_model_has_no_script_to_read_its_length_from(search):
    search.outcome.stages = [stage("final", {NAIVE_NAME: 100.0})]
    steps, source = planned_steps(search)
    assert steps is None and "give --steps N" in source


def _frames_in_loops(args, data):
    for _epoch in range(args.epochs):
        for _i, _batch in enumerate(data):
            return loop_bound([sys._getframe()])
    return None


def _frames_in_a_breaking_loop(n):
    for step in range(n):
        if step > 3:
            break
        return loop_bound([sys._getframe()])
    return None


def _frames_in_a_while_loop():
    while True:
        return loop_bound([sys._getframe()])


def test_loop_bounds_are_read_from_the_frames_variables():
    length = _frames_in_loops(Namespace(epochs=3), DataLoader(TensorDataset(torch.zeros(40, 2)), batch_size=16))
    assert length["steps"] == 9  # 3 epochs x 3 batches
    assert "`for _epoch in range(args.epochs)` (3)" in length["source"]
    assert "`for (_i, _batch) in enumerate(data)` (3)" in length["source"]
    assert loop_bound.__module__ == "pitstop.train.script.run_length"
    assert _frames_in_loops(Namespace(epochs=4), [1, 2])["steps"] == 8


def test_a_loop_that_can_break_or_a_while_loop_leaves_the_length_unknown():
    with pytest.raises(Unknown, match="can end early"):
        _frames_in_a_breaking_loop(10)
    with pytest.raises(Unknown, match="no bound"):
        _frames_in_a_while_loop()


def test_gradient_accumulation_divides_the_iterations():
    def step(n):
        for _ in range(n):
            return loop_bound([sys._getframe()], per_step=4)

    length = step(400)
    assert length["steps"] == 100 and "4 backward passes per step" in length["source"]


# -- one-time costs against the planned run ---------------------------------------------------


def _final(search, compile_s, steps=None, found_=None):
    search.outcome.stages = [stage("final", {NAIVE_NAME: 100.0, "bf16-autocast": 80.0,
                                             "bf16-autocast+compile": 62.0})]
    search.outcome.stages[0].result.row("bf16-autocast+compile", 8).compile_s = compile_s
    search.group.found = found_ or {}
    if steps is not None:
        search.group.settings = search.group.settings.__class__(batch_size=8, threads=2, steps=steps)
    search.outcome.notes.clear()
    search._decide()
    return search.outcome


def test_compilation_that_a_60_step_run_never_pays_back_is_not_chosen(search):
    """The held-out nanoGPT-style script: 1.62x per step, 26 s to compile, 60 steps planned."""
    outcome = _final(search, 26.0, found_={"script": "t.py", "run_length": {"steps": 60, "source": "the loop bounds"}})
    assert outcome.winner.variant == "bf16-autocast"  # no one-time cost: it pays from the first step
    assert outcome.run_length == {"steps": 60, "source": "the loop bounds"}
    note = next(n for n in outcome.notes if n.startswith("bf16-autocast+compile: its one-time cost"))
    assert "(compilation, 26.0 s) pays back after 684 steps, more than the 60 planned (the loop bounds)" in note


def test_compilation_is_chosen_when_the_planned_run_pays_it_back(search):
    outcome = _final(search, 26.0, steps=5000)
    assert outcome.winner.variant == "bf16-autocast+compile"
    assert any(n.startswith("planned run: 5,000 steps (--steps)") for n in outcome.notes)
    assert outcome.winner.details["one_time_s"] == 26.0


def test_an_unknown_run_length_says_which_choice_was_made_under_which_assumption(search):
    outcome = _final(search, 26.0, found_=found())
    assert outcome.winner.variant == "bf16-autocast+compile"
    note = next(n for n in outcome.notes if n.startswith("the run length is unknown"))
    assert "(the loop at line 9 can end early (a break))" in note
    assert "assuming the run is longer than 684 steps" in note and "give --steps N" in note


def test_a_loaders_worker_start_up_is_its_one_time_cost(search):
    search.outcome.stages = [stage("final", {NAIVE_NAME: 100.0, "workers2": 50.0})]
    rows = {r.variant: r for r in search.outcome.stages[0].rows}
    rows[NAIVE_NAME].details = {"before_first_step_s": 2.0}
    rows["workers2"].details = {"before_first_step_s": 4.5}  # 2.5 s more before its first step
    search.group.found = {"script": "t.py", "run_length": {"steps": 40, "source": "the loop bounds"}}
    search._decide()  # 2.5 s / 50 ms saved = 50 steps > 40
    assert search.outcome.winner is None
    assert any("(worker start-up, 2.5 s) pays back after 50 steps, more than the 40 planned" in n
               for n in search.outcome.notes)
    search.group.found["run_length"]["steps"] = 400
    search._decide()
    assert search.outcome.winner.variant == "workers2"


def test_an_item_caches_one_time_cost_is_its_fill_as_timed_where_it_ran(search):
    """A cache adds only its fill before the first step: that fill, timed in the variant's process, is
    its cost, not the difference of two start-ups (a loaded clean-clone run read 0.75 s there for a
    0.25 s fill and refused the cache); with a worker, the start-up difference, and at least the fill."""
    search.outcome.stages = [stage("final", {NAIVE_NAME: 100.0, "item-cache": 10.0, "workers1+item-cache": 10.0})]
    rows = {r.variant: r for r in search.outcome.stages[0].rows}
    rows[NAIVE_NAME].details = {"before_first_step_s": 7.2}
    rows["item-cache"].details = {"before_first_step_s": 7.95, "cache_fill_s": 0.25}
    rows["workers1+item-cache"].details = {"before_first_step_s": 7.3, "cache_fill_s": 0.25}
    search.group.found = {"script": "t.py", "run_length": {"steps": 120, "source": "the script's own end"}}
    search._decide()  # 0.25 s / 90 ms saved a step: 3 steps
    assert rows["item-cache"].details["one_time_s"] == 0.25
    assert rows["workers1+item-cache"].details["one_time_s"] == 0.25  # its start-up read 0.1 s: the fill is more
    rows["workers1+item-cache"].details["before_first_step_s"] = 9.2
    search._decide()
    assert rows["workers1+item-cache"].details["one_time_s"] == pytest.approx(2.0)


def test_a_final_the_budget_cut_short_says_so_and_names_a_budget_that_fits(search):
    """Nothing won because the final never measured its first finalist: the verdict says that (with
    the probe's figure) and a budget to run again with, not that nothing was faster."""
    search.outcome.stages = [stage("probe", {NAIVE_NAME: 100.0, "bf16-autocast": 60.0}),
                             stage("final", {NAIVE_NAME: 100.0, "bf16-autocast": 60.0})]
    row = search.outcome.stages[1].result.row("bf16-autocast", 8)
    row.status, row.reason, row.replica_samples_s = "skipped", "not measured: the time budget (120 s) ran out first", []
    search._decide()
    verdict = search.outcome.verdict
    assert search.outcome.winner is None
    assert verdict.startswith("the time budget ran out before the final measured bf16-autocast, 1.6"), verdict
    assert int(verdict.split("--time-budget-s ")[1].split()[0]) >= 10


# -- the loader variants and their edits -------------------------------------------------------


def test_worker_counts_are_planned_with_the_threads_they_leave(search, monkeypatch):
    monkeypatch.setattr("pitstop._env.physical_cores", lambda: 2)
    search.group.settings = search.group.settings.__class__(batch_size=8, threads=2, techniques=("workers", "threads"))
    search.group.found = found()
    configs, first = search._loader_configs()
    assert [c.name for c in configs] == ["workers1", "workers1+threads1", "workers2", "workers2+threads1",
                                         "workers4", "workers4+threads1"]
    assert first  # no step timed: the input first
    search.group.found = {"sites": {"loaders": [], "train_loader": None}}
    assert search._loader_configs() == ([], False)  # no DataLoader in the loop: nothing to vary


@pytest.mark.parametrize(("waits", "where"), [((0.9, 0.5, 0.6), "first"), ((0.9, 0.1, 0.2), "after the compute"),
                                              ((0.9, 0.02, 0.01), "not at all")])
def test_the_loader_is_probed_where_the_discovery_saw_a_wait_that_could_pay(search, monkeypatch, waits, where):
    """A step waiting w of its time gains at most 1/(1-w): the loader first from a third, after the
    compute techniques below that, not at all under 5% (its first step, which starts the iterator,
    does not count); a search of the loader alone measures it anyway."""
    monkeypatch.setattr("pitstop._env.physical_cores", lambda: 2)
    search.group.settings = search.group.settings.__class__(batch_size=8, threads=2,
                                                            techniques=("workers", "precision", "optimizer"))
    search.group.found = {**found(), "times": [1.0, 1.0, 1.0], "data_times": list(waits)}
    names = [c.name for c in search.singles()]
    loaders = [i for i, n in enumerate(names) if n.startswith("workers")]
    assert {"first": loaders == [0, 1, 2], "after the compute": loaders and loaders[0] > 0 and
            names[loaders[0] - 1].startswith(("bf16", "fp16", "fused", "foreach")),
            "not at all": not loaders}[where], names
    skipped = [n for n in search.outcome.notes if n.startswith("loader workers: not tried")]
    assert bool(skipped) == (where == "not at all")
    if skipped:
        assert "waited at most 2% of their time" in skipped[0] and "at most 1.02x" in skipped[0]
        search.group.settings = search.group.settings.__class__(batch_size=8, threads=2, techniques=("workers",))
        assert [c.name for c in search.singles()] == ["workers1", "workers2", "workers4"]


def test_loader_workers_measured_on_a_busy_machine_are_not_chosen(search):
    final = stage("final", {NAIVE_NAME: 100.0, "workers2": 50.0})
    final.load = {"busy": True, "others_cpu_share": 0.4, "loadavg_end": 3.0}
    assert not search.reliable(final, final.rows[1])
    assert any("measure loader workers on a quiet machine" in n for n in search.outcome.notes)


def test_the_loader_edit_is_keywords_of_its_construction(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom torch.utils.data import DataLoader\n\n\n"
                      "loader = DataLoader(data,\n                    batch_size=16)\n")
    site = {"file": str(script), "line": 5, "function": "<module>", "first_line": 1}
    changes = edits.plan(edits.TrainConfig(workers=2), found(site=site), "cpu")
    text = edits.apply(changes)[str(script)]
    assert "batch_size=16, num_workers=2, persistent_workers=True)" in text
    cuda = edits.plan(edits.TrainConfig(workers=2), found(site=site), "cuda")
    assert "pin_memory=True" in edits.apply(cuda)[str(script)]
    ahead = edits.apply(edits.plan(edits.TrainConfig(workers=2, prefetch=4), found(site=site), "cpu"))[str(script)]
    assert "batch_size=16, num_workers=2, persistent_workers=True, prefetch_factor=4)" in ahead
    assert [c.why for c in edits.plan(edits.TrainConfig(workers=2, prefetch=4), found(site=site), "cpu")] == \
        ["workers2+prefetch4"] * 3
    with pytest.raises(UsageError, match="prefetch needs workers"):
        edits.TrainConfig(prefetch=4)  # no workers: nothing is made ahead
    assert parse_train_variant("workers2+prefetch4+threads1") == edits.TrainConfig(workers=2, prefetch=4, threads=1)


def test_the_evaluations_loaders_over_the_same_dataset_get_the_workers_too(tmp_path):
    """Another DataLoader over the training loader's Dataset class, built at its own line of the
    user's files, gets the same keywords; one over another Dataset, one a library builds, one given
    num_workers by position, one that cannot use workers, and the training loader's own line built
    again (a helper) do not get a second edit."""
    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom torch.utils.data import DataLoader\n\n\n"
                      "loader = DataLoader(data, batch_size=16)\n"
                      "dev = DataLoader(dev_data, batch_size=32)\n"
                      "labels = DataLoader(other, batch_size=32)\n"
                      "test = DataLoader(test_data, 8, False, None, None, 0)\n"
                      "odd = DataLoader(odd_data, batch_size=8)\n")
    site = {"file": str(script), "line": 5, "function": "<module>", "first_line": 1}
    at = [dict(site, line=n) for n in (5, 6, 7, 8, 9)]
    loaders = [_loader(site=at[0]), _loader(site=at[1]), _loader(site=at[2], dataset="Labels"),
               _loader(site=at[3], positional=6), _loader(site=at[4], cannot_use_workers="its dataset holds a file"),
               _loader(site=None), _loader(site=at[0])]
    text = edits.apply(edits.plan(edits.TrainConfig(workers=1), {"sites": {"loaders": loaders, "train_loader": 0},
                                                                 "trainers": []}, "cpu"))[str(script)]
    assert text.count("num_workers=1, persistent_workers=True") == 2
    assert "dev = DataLoader(dev_data, batch_size=32, num_workers=1, persistent_workers=True)" in text
    assert "labels = DataLoader(other, batch_size=32)\n" in text
    assert "odd = DataLoader(odd_data, batch_size=8)\n" in text


@pytest.mark.parametrize(("loader", "why"), [
    ({"cannot_use_workers": "its dataset (S) is an IterableDataset: ..."}, "cannot use worker processes: its dataset"),
    ({"positional": 6}, "num_workers by position"),
    ({"num_workers": 2, "persistent_workers": True}, "already runs 2 persistent workers"),
    ({"site": None}, "built by a library"),
])
def test_a_loader_that_cannot_take_workers_is_a_skipped_variant_with_its_reason(loader, why):
    with pytest.raises(edits.NotMechanical, match=why):
        edits.plan(edits.TrainConfig(workers=2), found(**loader), "cpu")


def test_under_the_hf_trainer_the_loader_is_set_through_training_arguments(tmp_path):
    script = tmp_path / "hf.py"
    script.write_text("args = TrainingArguments(output_dir='o', max_steps=10)\n")
    hf = {**found(site=None), "trainers": [{"kind": "hf-arguments", "class": "TrainingArguments",
                                           "site": {"file": str(script), "line": 1}, "keywords": []}]}
    text = edits.apply(edits.plan(edits.TrainConfig(workers=2), hf, "cpu"))[str(script)]
    assert "max_steps=10, dataloader_num_workers=2, dataloader_persistent_workers=True)" in text
    ahead = edits.apply(edits.plan(edits.TrainConfig(workers=2, prefetch=4), hf, "cpu"))[str(script)]
    assert "dataloader_persistent_workers=True, dataloader_prefetch_factor=4)" in ahead


class _Holds(torch.utils.data.Dataset):
    def __init__(self, handle):
        self.handle = handle

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return torch.zeros(1)


class _Stream(IterableDataset):
    def __iter__(self):
        yield torch.zeros(1)


def test_why_a_dataset_cannot_go_to_worker_processes(tmp_path):
    assert _not_to_workers(DataLoader(TensorDataset(torch.zeros(4))), "fork") is None
    assert "IterableDataset" in _not_to_workers(DataLoader(_Stream()), "fork")
    with (tmp_path / "f").open("w") as handle:
        assert "open file (_Holds.handle)" in _not_to_workers(DataLoader(_Holds(handle)), "fork")
    unpicklable = DataLoader(TensorDataset(torch.zeros(4)), collate_fn=lambda b: b)
    assert "collate_fn cannot be sent to a spawned worker" in _not_to_workers(unpicklable, "spawn")
    assert _not_to_workers(unpicklable, "fork") is None  # forked workers inherit the lambda


def test_the_script_mode_options_are_the_cli_options_that_are_not_the_models():
    """One list (``SCRIPT_OPTIONS``) says which options after a script's path are pitstop's: the
    parser's own valued options less those of a model spec and --device."""
    import argparse

    from pitstop.cli import build_parser
    from pitstop.cli.train import MODEL_ONLY
    from pitstop.train.settings import SCRIPT_OPTIONS

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    train = sub.choices["train"]
    assert set(SCRIPT_OPTIONS) == set(train.VALUED) - {*MODEL_ONLY, "--device"}
    assert "--allow-emulated" in train.FLAGS and "--patch" in train.VALUED  # read from the parser, not a copy


def test_on_cuda_the_workers_edit_pins_and_makes_the_batch_copies_non_blocking(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("loader = DataLoader(data, batch_size=16)\nfor x, y in loader:\n    x = x.to(device)\n"
                      "    y = y.cuda()\n")
    site = {"file": str(script), "line": 1, "function": "<module>", "first_line": 1}
    doc = found(site=site)
    doc["sites"]["batch_copies"] = [{**site, "line": 3}, {**site, "line": 4}, {**site, "line": 3}]
    text = edits.apply(edits.plan(edits.TrainConfig(workers=2), doc, "cuda:0"))[str(script)]
    assert "DataLoader(data, batch_size=16, num_workers=2, persistent_workers=True, pin_memory=True)" in text
    assert "x = x.to(device, non_blocking=True)" in text and "y = y.cuda(non_blocking=True)" in text
    assert "non_blocking" not in edits.apply(edits.plan(edits.TrainConfig(workers=2), doc, "cpu"))[str(script)]


def test_a_script_without_a_loader_is_told_so_and_a_model_spec_refuses_the_axis(search, capsys):
    search.group.found = {"sites": {"loaders": [], "train_loader": None}}
    assert search._loader_configs() == ([], False)
    assert any("the training loop reads no torch DataLoader" in n for n in search.outcome.notes)
    from pitstop.cli import main

    assert main(["train", "zoo:mlp", "--techniques", "workers"]) == 2
    assert "--techniques: workers varies a training script's DataLoader" in capsys.readouterr().err


# -- end to end: a short script whose compile would not pay back ------------------------------------


def test_a_short_script_gets_no_compile_that_its_run_would_not_pay_back(tmp_path):
    """tests/train/scripts/short_pointwise.py: 30 steps of a pointwise chain that a compiled graph
    fuses (faster per step beyond noise), but whose compilation costs more than 30 steps save. The
    run length is read from the script (its own end, or its loop bound), the compiled variant is
    named with its break-even and not chosen, and no patch is written: the whole process stays the
    original's."""
    import json
    import os
    import re
    import shutil
    import subprocess
    from pathlib import Path

    shutil.copy(Path(__file__).parent / "scripts" / "short_pointwise.py", tmp_path / "short.py")
    src = str(Path(__file__).resolve().parents[2] / "src")
    # 240 s: the probe's share (45%) must cover the cold compile; at 120 s, on 2026-12-01's slower machine beside
    # the other xdist worker, the compile had not ended within its share (the search stops when it is done)
    proc = subprocess.run([sys.executable, "-m", "pitstop", "train", "--time-budget-s", "240", "--techniques",
                           "compile=default", "--replicas", "1", "--json", "t.json", "--patch", "p.diff", "short.py"],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": src},
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    doc = json.loads((tmp_path / "t.json").read_text())
    rows = [(r["variant"], r["stage"], r["status"], (r.get("speedup") or {}).get("median")) for r in doc["results"]]
    planned = doc["search"]["run_length"]
    assert planned["steps"] in (30, 31), planned  # 30 steps (its own end, or its loop bound)
    compiled = [r for r in doc["results"] if r["variant"] == "compile" and r["stage"].startswith("final")]
    assert compiled and compiled[-1]["status"] == "ok", rows
    assert compiled[-1]["speedup"]["median"] > 1.0, rows  # faster per step: refused for its cost, not its speed
    note = next((n for n in doc["notes"] if n.startswith("compile: its one-time cost (compilation")), None)
    assert note, doc["notes"]
    even = int(re.search(r"pays back after ([\d,]+) steps", note).group(1).replace(",", ""))
    assert even > planned["steps"] and "not chosen" in note
    assert doc["winner"]["variant"] == "naive" and not (tmp_path / "p.diff").exists()
    assert "naive stays" in proc.stdout


@pytest.mark.parametrize(("data_ms", "timed_from"), [
    ([0.2, 0.2, 55.0, 55.0, 55.0], 3),  # workers slower than the step refill the queue: timed from the first wait
    ([0.2, 0.2, 0.2, 0.2, 0.2, 0.2], 4),  # never waits (the step is the bottleneck): the queue, then as many again
    ([0.2, 55.0, 55.0, 55.0], 2),  # the queue drained and the next step waits: timed at once
])
def test_a_loader_turn_is_timed_from_the_pipelines_own_rate(data_ms, timed_from):
    """A turn of a loader-workers variant first drains the batches made while it waited (2 here),
    then, while a step still finds its batch ready, up to 2 more: its timed steps start after."""
    from pitstop.train.script.child import Server

    server = Server(None, {})  # type: ignore[arg-type]
    probe = server.probe
    server.drain = server.refill = 2
    for ms in data_ms:
        probe.steps += 1
        probe.step_times.append(0.135)
        probe.step_data.append(ms / 1e3)
        if not server._draining():
            break
    assert server.mark == timed_from and server.drain == 0
