"""Issue 44 end to end: ``pitstop train SCRIPT`` on a loop that waits for its DataLoader
(tests/train/scripts/slow_loader_loop.py: a 1.5 ms "decode" per sample, a random augmentation,
no workers). Only whole processes prove these: the loader found where the loop reads it, worker
processes started by the edited script, the input wait timed in each variant's process, the run
length read from the live loop."""

from __future__ import annotations

import json
import sys

import pytest

from pitstop.train.config import NAIVE
from pitstop.train.script import edits
from tests.train.test_train_script import GIT, _discover, final_loss, repo, run

pytestmark = pytest.mark.skipif(GIT is None or sys.platform != "linux", reason="git; fork-started workers")


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """One search of the loader's workers (and the threads they leave) on the script, 8 epochs of 40 batches."""
    tmp = tmp_path_factory.mktemp("input")
    script = repo(tmp, "slow_loader_loop.py")
    proc = run("train", "--techniques", "workers,threads", "--time-budget-s", "60", "--replicas", "1", "--json",
               "t.json", "--patch", "p.diff", script.name, "--epochs", "8", cwd=tmp)
    return tmp, script, proc, json.loads((tmp / "t.json").read_text())


def test_the_loader_is_found_and_its_workers_are_measured_with_the_input_wait(searched):
    tmp, _script, proc, doc = searched
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    sites = doc["script"]["sites"]
    loader = sites["loaders"][sites["train_loader"]]
    assert loader["site"]["line"] == 48 and loader["num_workers"] == 0 and loader["batches"] == 40
    assert loader["draws_random"] is True  # the augmentation draws from torch's global generator
    probed = {r["variant"]: r["status"] for r in doc["results"] if r["stage"] == "probe"}
    assert {"workers1", "workers2"} <= set(probed) and "ok" in (probed["workers1"], probed["workers2"]), probed
    waits = doc["script"]["input_wait"]
    # the unmodified step waits at least for its 16 decodes of 1.5 ms (sleeps: never shorter under load); on a
    # quiet machine that is most of the step, beside the other xdist worker the compute part grows (0.28 of 96 ms)
    assert waits["naive"]["ms"] >= 16 * 1.5 and 0 < waits["naive"]["share"] < 1, waits
    assert "Input wait (time in the DataLoader's next(), per step, median): naive" in proc.stdout
    winner = doc["winner"]["variant"]
    if "workers" in winner:  # a quiet machine: the workers take the wait off the step
        assert waits[winner]["ms"] < 0.5 * waits["naive"]["ms"], waits
        patch = (tmp / "p.diff").read_text()
        assert "num_workers=" in patch and "persistent_workers=True" in patch


def test_the_run_length_is_read_from_the_loops_around_the_step(searched):
    _, _, _, doc = searched
    length = doc["search"]["run_length"]
    assert length["steps"] == 320, length  # 8 epochs x 40 batches
    assert "`for _epoch in range(args.epochs)` (8)" in length["source"] and "in loader` (40)" in length["source"]
    assert any(n.startswith("planned run: 320 steps") for n in doc["notes"]), doc["notes"]


def test_the_workers_edit_applies_and_the_patched_script_trains_without_pitstop(searched, tmp_path):
    """Whatever won on this machine: the workers2 edit, planned from the JSON's sites, applies to the
    script, and the patched script runs its epochs with two worker processes, without pitstop."""
    _, script, _, doc = searched
    mine = tmp_path / script.name
    mine.write_text(script.read_text())
    sites = json.loads(json.dumps(doc["script"]["sites"]).replace(str(script), str(mine)))
    text = edits.apply(edits.plan(NAIVE.with_(workers=2), {"sites": sites, "trainers": []}, "cpu"))[str(mine)]
    assert "DataLoader(data, batch_size=16, shuffle=not args.iterable, num_workers=2, persistent_workers=True)" in text
    # the evaluation's loader over the same Dataset class gets the same workers: the whole run waits for it too
    assert "held_out = DataLoader(Decoded(48), batch_size=16, num_workers=2, persistent_workers=True)" in text
    mine.write_text(text)
    before = run(script.name, "--epochs", "2", cwd=script.parent, pitstop=False)
    after = run(mine.name, "--epochs", "2", cwd=tmp_path, pitstop=False)
    assert after.returncode == 0, after.stderr
    assert abs(final_loss(after.stdout) - final_loss(before.stdout)) < 0.5  # another draw of the augmentation
    assert "held-out loss" in after.stdout


def test_the_note_names_the_evaluation_loader_that_gets_the_workers_too(searched):
    _, _, _, doc = searched
    sites = doc["script"]["sites"]
    assert [x["site"]["line"] for x in sites["loaders"]] == [48, 49] and sites["train_loader"] == 0
    if any("workers" in r["variant"] for r in doc["results"] if r["stage"] == "final"):
        assert any("other DataLoader(s) over Decoded (slow_loader_loop.py:49" in n for n in doc["notes"]), doc["notes"]


def test_a_dataset_that_cannot_go_to_workers_is_a_skipped_variant_with_its_reason(tmp_path):
    script = repo(tmp_path, "slow_loader_loop.py")
    group = _discover(script, "--iterable", "--epochs", "1")
    try:
        why = group._gate(NAIVE.with_(workers=2))
        assert why and "IterableDataset: each worker would yield the whole stream" in why
        length = group.found["run_length"]
        assert length["steps"] is None and "has no length" in length["source"]
    finally:
        group.close()


@pytest.mark.gpu
def test_on_cuda_the_loader_is_pinned_and_the_batchs_copies_do_not_wait(tmp_path):
    """CUDA: the discovery run finds the batch's copies to the GPU (x.to(device), y.to(device)),
    and the workers edit pins the loader's memory and makes both copies non_blocking."""
    script = repo(tmp_path, "slow_loader_loop.py")
    group = _discover(script, "--device", "cuda", "--epochs", "1")
    try:
        copies = group.found["sites"]["batch_copies"]
        assert sorted(c["line"] for c in copies) == [54, 55], copies
        text = edits.apply(group.changes(NAIVE.with_(workers=2)))[str(script.resolve())]
    finally:
        group.close()
    assert "pin_memory=True" in text
    assert "x = x.to(args.device, non_blocking=True)" in text and "y = y.to(args.device, non_blocking=True)" in text


def test_a_workers_variant_of_a_random_dataset_is_gated_by_its_trajectory_not_step_one(tmp_path):
    """The dataset draws random numbers while it makes a batch (the augmentation): in workers those
    come from the workers' seeds, so step 1 trains on another batch; its step-1 gradients are
    recorded, not gated (the trajectory decides); any other variant is still held to the floor."""
    from pitstop.engine.measurement import Measurement
    from pitstop.train.group import _Live

    script = repo(tmp_path, "slow_loader_loop.py")
    group = _discover(script, "--epochs", "1")
    try:
        far = {"overall_cosine": 0.02, "missing": [], "nonfinite": []}
        workers = _Live(NAIVE.with_(workers=2), Measurement("workers2", {}, 1, fidelity={}), [])
        assert group.gradient_rejection(workers, far) is None
        assert "not gated, its dataset draws random numbers" in workers.row.fidelity["gradients_not_gated"]
        other = _Live(NAIVE.with_(optimizer="foreach"), Measurement("foreach", {}, 1, fidelity={}), [])
        assert "0.020 < 0.500" in group.gradient_rejection(other, far)
    finally:
        group.close()
