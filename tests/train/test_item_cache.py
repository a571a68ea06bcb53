"""The item cache (issue 44's input pipeline, from the second epoch on): the check that a Dataset's
items are fixed, on real Datasets; the edit after the class and where it is refused; and end to end,
``pitstop train`` on a loop that tokenises in ``__getitem__`` (tests/train/scripts/tokenized_loop.py):
the cache found, measured after its fill, chosen with its one-time cost, and the patched script
training bit for bit as the original; a one-epoch run gets no cache (no item is made twice)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset, random_split

from pitstop.train.config import NAIVE
from pitstop.train.script import cache_edit, edits, item_cache
from tests.train import cache_datasets as ds
from tests.train.test_train_script import GIT, final_loss, repo, run


def _check(dataset, *others):
    loaders = [DataLoader(dataset, batch_size=4), *(DataLoader(o, batch_size=4) for o in others)]
    return item_cache.check(loaders[0], loaders)


def test_fixed_items_pass_with_where_to_edit_and_what_was_measured():
    got = _check(ds.Fixed(40), ds.Fixed(8))  # the evaluation's dataset of the same class counts too
    assert got["class"] == "Fixed" and Path(got["file"]).name == "cache_datasets.py"
    source = Path(got["file"]).read_text().splitlines()
    assert source[got["line"] - 1].startswith("class Fixed(") and got["end_line"] > got["line"]
    assert got["items"] == 48 and got["checked"] == 3 and got["bytes"] > 48 * 32 and got["item_ms"] >= 0


def test_a_subset_is_judged_by_the_dataset_under_it():
    train, _ = random_split(ds.Fixed(40), [30, 10], generator=torch.Generator().manual_seed(0))
    assert _check(train)["class"] == "Fixed"


@pytest.mark.parametrize(("dataset", "why"), [
    (ds.Augmented(), "draws from the global random generators"),
    (ds.OwnGenerator(), "made twice differs (other values)"),
    (ds.Counting(), "Counting.__getitem__ stores self.calls"),
    (ds.Curriculum(), "Curriculum.set_epoch() changes self.scale, which __getitem__ reads"),
    (ds.Unhashable(), "not hashable"),
    (ds.Streamed(), "is an IterableDataset"),
    (TensorDataset(torch.zeros(4, 2)), "defined in a library"),
])
def test_items_that_a_cache_would_change_are_refused_with_the_reason(dataset, why):
    got = _check(dataset)
    assert "class" not in got and why in got["cannot"], got


def _padded_in_place(items):
    for item in items:
        item["x"].mul_(2)  # a collate function that changes what it is given
    return items


@pytest.mark.parametrize(("options", "why"), [
    ({"batch_size": None}, "hands each item over as it is (batch_size=None)"),
    ({"batch_size": 4, "collate_fn": _padded_in_place}, "collate function changes the items it is given"),
    ({"batch_size": 4, "collate_fn": lambda items: items[0]["x"]}, "shares memory with the items"),
])
def test_a_loop_that_could_change_a_cached_item_in_place_gets_no_cache(options, why):
    got = item_cache.check(DataLoader(ds.Fixed(), **options))
    assert why in got.get("cannot", ""), got


def test_the_check_puts_the_random_generators_back():
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    _check(ds.Augmented())  # draws from torch's generator while it is checked
    assert torch.equal(torch.rand(4), expected)


def test_items_over_a_quarter_of_the_memory_are_refused(monkeypatch):
    monkeypatch.setattr(item_cache, "_available_bytes", lambda: 64 * 2**20)  # 40 items of 1 MiB > 16 MiB
    got = _check(ds.Large())
    assert "would take about 40 MiB, more than a quarter of the 64 MiB available" in got["cannot"], got


def _found(tmp_path: Path, **loader) -> dict:
    target = tmp_path / "data.py"
    target.write_text("import torch\n\n\nclass Texts:\n    def __getitem__(self, i):\n        return i\n\n\n"
                      "loader = torch.utils.data.DataLoader(Texts(), batch_size=16)\n")
    cache = {"class": "Texts", "file": str(target), "line": 4, "end_line": 6, "items": 10, "bytes": 800,
             "item_ms": 2.0, "checked": 3}
    site = {"num_workers": 0, "persistent_workers": False, "pin_memory": False, "prefetch_factor": None,
            "batches": 20, "batch_size": 16, "dataset": "Texts", "positional": 1, "cache": cache,
            "site": {"file": str(target), "line": 9, "first_line": 1, "function": "<module>"}, **loader}
    return {"sites": {"train_loader": 0, "loaders": [site]}, "trainers": [], "times": [0.02] * 5,
            "eval_steps": [False] * 5}


def test_the_edit_caches_getitem_after_the_class_and_imports_functools_once(tmp_path):
    found = _found(tmp_path)
    text = edits.apply(edits.plan(NAIVE.with_(cache=True), found))[str(tmp_path / "data.py")]
    assert text.splitlines()[1] == "import functools"
    assert "        return i\n\n\nTexts.__getitem__ = functools.cache(Texts.__getitem__)  # pitstop:" in text
    namespace: dict = {}
    exec(compile(text, "data.py", "exec"), namespace)  # the edited file runs, and caches
    texts = namespace["Texts"]()
    assert texts[3] == 3 and namespace["Texts"].__getitem__.cache_info().currsize == 1
    (tmp_path / "data.py").write_text("import functools\n" + (tmp_path / "data.py").read_text().replace(
        "class Texts", "\nclass Texts"))
    found["sites"]["loaders"][0]["cache"]["line"] = 6
    changes = edits.plan(NAIVE.with_(cache=True), found)
    assert [c.what for c in changes] == ["after-class"]  # functools is bound already


@pytest.mark.parametrize(("config", "loader", "why"), [
    (NAIVE.with_(cache=True, workers=2), {}, "an item cache with 2 workers"),
    (NAIVE.with_(cache=True), {"num_workers": 4, "persistent_workers": True}, "an item cache with 4 workers"),
    (NAIVE.with_(cache=True), {"num_workers": 1}, "restarts every epoch"),
    (NAIVE.with_(cache=True), {"cache": {"cannot": "Counting.__getitem__ stores self.calls"}}, "stores self.calls"),
])
def test_the_edit_is_refused_where_the_cache_would_not_hold_what_was_measured(tmp_path, config, loader, why):
    with pytest.raises(edits.NotMechanical, match=why):
        edits.plan(config, _found(tmp_path, **loader))


def test_one_persistent_worker_keeps_the_cache(tmp_path):
    changes = edits.plan(NAIVE.with_(cache=True, workers=1), _found(tmp_path))
    assert {c.what for c in changes} >= {"after-class", "keyword"}


def test_the_probe_tries_the_cache_only_where_items_are_made_twice(tmp_path):
    found = _found(tmp_path)
    loader, notes = found["sites"]["loaders"][0], []
    assert item_cache.offered(found, loader, notes, None)
    assert "Texts's items checked on 3" in notes[-1] and "10 items" in notes[-1]
    assert not item_cache.offered(found, loader, notes, 20)  # one epoch of 20 batches
    assert "is one epoch of 20 steps or less, so no item is made twice" in notes[-1]
    assert item_cache.offered(found, loader, notes, 21)
    loader["cache"] = {"cannot": "Counting.__getitem__ stores self.calls"}
    assert not item_cache.offered(found, loader, notes, 100) and notes[-1].startswith("item cache: not tried: Count")


def test_after_class_needs_a_class_statement():
    with pytest.raises(edits.NotMechanical, match="no class statement at line 1"):
        cache_edit.after_class("x = 1\n", 1, "y = 2")


# -- end to end -------------------------------------------------------------------------------------

e2e = pytest.mark.skipif(GIT is None or sys.platform != "linux", reason="git; fork-started workers")


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """One cache search on 6 epochs of 20 batches (a tokeniser's work in __getitem__, no workers). The
    budget leaves the probe's share (45%) room for the discovery on a loaded 2-core machine: at 40 s a
    clean-clone run beside the other xdist worker started no variant before it (the search ends when
    it is done, in about 20 s alone)."""
    tmp = tmp_path_factory.mktemp("cache")
    script = repo(tmp, "tokenized_loop.py")
    proc = run("train", "--techniques", "cache", "--time-budget-s", "90", "--replicas", "1", "--json", "t.json",
               "--patch", "p.diff", script.name, "--epochs", "6", cwd=tmp)
    return tmp, script, proc, json.loads((tmp / "t.json").read_text())


@e2e
def test_the_cache_is_measured_after_its_fill_and_chosen_with_its_one_time_cost(searched):
    tmp, _, proc, doc = searched
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    sites = doc["script"]["sites"]
    cache = sites["loaders"][sites["train_loader"]]["cache"]
    assert cache["class"] == "Texts" and cache["items"] == 352  # the training 320 and the evaluation's 32
    final = {r["variant"]: r for r in doc["results"] if r["stage"] == "final"}
    assert final["item-cache"]["status"] == "ok" and final["item-cache"]["details"]["cache_fill_s"] > 0
    assert final["item-cache"]["details"]["one_time_s"] == final["item-cache"]["details"]["cache_fill_s"]
    waits = doc["script"]["input_wait"]
    assert waits["item-cache"]["ms"] < 0.5 * waits["naive"]["ms"], waits  # the items are read back, not made
    assert doc["winner"]["variant"] == "item-cache", doc["notes"]
    assert "Texts's items checked on 3" in proc.stdout and "its one-time cost pays back after" in proc.stdout
    assert "Texts.__getitem__ = functools.cache(Texts.__getitem__)" in (tmp / "p.diff").read_text()


@e2e
def test_the_patched_script_trains_bit_for_bit_as_the_original_without_pitstop(searched, tmp_path):
    """The patch from the search, and the cache with one persistent worker planned from the same JSON."""
    tmp, script, _, doc = searched
    before = run(script.name, "--epochs", "3", cwd=tmp, pitstop=False)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp, check=True)
    after = run(script.name, "--epochs", "3", cwd=tmp, pitstop=False)
    assert before.returncode == after.returncode == 0, after.stderr
    assert final_loss(after.stdout) == final_loss(before.stdout) and after.stdout == before.stdout
    mine = tmp_path / script.name
    mine.write_text((SCRIPT_DIR / script.name).read_text())
    sites = json.loads(json.dumps(doc["script"]["sites"]).replace(str(script), str(mine)))
    text = edits.apply(edits.plan(NAIVE.with_(cache=True, workers=1), {"sites": sites, "trainers": []}))[str(mine)]
    mine.write_text(text)
    one_worker = run(mine.name, "--epochs", "3", cwd=tmp_path, pitstop=False)
    assert one_worker.returncode == 0 and "num_workers=1, persistent_workers=True" in text, one_worker.stderr
    # the loader with a worker draws its workers' base seed from torch's generator, so the later epochs shuffle
    # another order: another draw of the same training, not the same bits
    assert abs(final_loss(one_worker.stdout) - final_loss(before.stdout)) < 0.5


@e2e
def test_a_one_epoch_run_gets_no_cache(tmp_path):
    script = repo(tmp_path, "tokenized_loop.py")
    proc = run("train", "--techniques", "cache", "--time-budget-s", "30", "--replicas", "1", "--json", "t.json",
               script.name, "--epochs", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    doc = json.loads((tmp_path / "t.json").read_text())
    assert not any(r["variant"] == "item-cache" for r in doc["results"])
    assert any("item cache: not tried: the planned run (20 steps) is one epoch of 20 steps" in n for n in doc["notes"])


SCRIPT_DIR = Path(__file__).parent / "scripts"


class _Searched:
    """What ``winner._items_reused`` reads of a search: the discovery's sites and a row's config."""

    def __init__(self, found: dict) -> None:
        self.group = type("Group", (), {"found": found})()

    @staticmethod
    def config_of(row) -> object:
        return row


def test_the_winner_passes_over_a_cache_when_the_run_ends_within_its_first_epoch(tmp_path):
    from pitstop.train.winner import _items_reused

    found = {**_found(tmp_path), "backwards_per_step": 2}  # 20 batches, accumulated in pairs: 10 steps an epoch
    search, cached = _Searched(found), NAIVE.with_(cache=True)
    assert "one epoch of 10 steps or less: no item made twice" in _items_reused(search, cached, 10)
    assert _items_reused(search, cached, 11) is None and _items_reused(search, cached, None) is None
    assert _items_reused(search, NAIVE.with_(workers=1), 5) is None
