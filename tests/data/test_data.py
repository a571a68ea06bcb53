"""The input pipeline: sampler invariants (property-based), tune_loader on real datasets,
the stall share, and `pitstop data`."""

import json
import subprocess
import sys
import time

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

from pitstop.data import LengthBucketSampler, padding_waste, stall_share, tune_loader
from pitstop.errors import UsageError

lengths_st = st.lists(st.integers(min_value=0, max_value=500), min_size=0, max_size=300)


@settings(max_examples=60, deadline=None)
@given(lengths=lengths_st, batch=st.integers(1, 17), seed=st.integers(0, 5), mega=st.integers(1, 8),
       shuffle=st.booleans())
def test_every_index_exactly_once_and_batches_full_but_the_last(lengths, batch, seed, mega, shuffle):
    sampler = LengthBucketSampler(lengths, batch, shuffle=shuffle, seed=seed, mega_batches=mega)
    batches = list(sampler)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert sum(1 for b in batches if len(b) < batch) <= 1  # only one batch may be short
    assert len(batches) == len(sampler)


@settings(max_examples=60, deadline=None)
@given(lengths=lengths_st, batch=st.integers(1, 17), seed=st.integers(0, 5))
def test_drop_last_drops_only_the_short_batch(lengths, batch, seed):
    batches = list(LengthBucketSampler(lengths, batch, seed=seed, drop_last=True))
    assert all(len(b) == batch for b in batches)
    assert len(batches) == len(lengths) // batch
    assert len({i for b in batches for i in b}) == len(batches) * batch


@settings(max_examples=40, deadline=None)
@given(lengths=lengths_st, batch=st.integers(1, 9), seed=st.integers(0, 5), epoch=st.integers(0, 3))
def test_deterministic_per_seed_and_epoch(lengths, batch, seed, epoch):
    a = LengthBucketSampler(lengths, batch, seed=seed)
    b = LengthBucketSampler(lengths, batch, seed=seed)
    a.set_epoch(epoch)
    b.set_epoch(epoch)
    assert list(a) == list(b)


def test_epochs_differ():
    s = LengthBucketSampler(list(range(200)), 8, seed=0)
    first = list(s)
    s.set_epoch(1)
    assert list(s) != first


@settings(max_examples=60, deadline=None)
@given(lengths=lengths_st, batch=st.integers(1, 9), replicas=st.integers(1, 4), seed=st.integers(0, 3))
def test_shards_are_disjoint_and_equal_with_drop_last(lengths, batch, replicas, seed):
    shards = [list(LengthBucketSampler(lengths, batch, seed=seed, drop_last=True, num_replicas=replicas, rank=r))
              for r in range(replicas)]
    counts = {len(s) for s in shards}
    assert len(counts) == 1  # the same number of batches on every rank: DDP steps stay in lockstep
    seen = [i for s in shards for b in s for i in b]
    assert len(seen) == len(set(seen))  # disjoint
    assert all(len(s) == len(LengthBucketSampler(lengths, batch, drop_last=True, num_replicas=replicas, rank=r))
               for r, s in enumerate(shards))


@settings(max_examples=60, deadline=None)
@given(lengths=lengths_st, batch=st.integers(1, 9), replicas=st.integers(1, 4), seed=st.integers(0, 3))
def test_shards_without_drop_last_cover_everything_with_equal_counts(lengths, batch, replicas, seed):
    shards = [list(LengthBucketSampler(lengths, batch, seed=seed, num_replicas=replicas, rank=r))
              for r in range(replicas)]
    assert len({len(s) for s in shards}) == 1
    assert {i for s in shards for b in s for i in b} == set(range(len(lengths)))


def test_bucketing_cuts_padding_on_a_long_tail():
    g = torch.Generator().manual_seed(0)
    lengths = torch.distributions.LogNormal(4.0, 0.8).sample((5000,)).clamp(1, 2000).long().tolist()
    torch.manual_seed(0)
    random_batches = list(BatchSampler(RandomSampler(range(5000), generator=g), 32, drop_last=False))
    bucketed = LengthBucketSampler(lengths, 32, seed=0)
    before, after = padding_waste(lengths, random_batches), padding_waste(lengths, bucketed)
    assert after < 0.3 * before  # >= 70% fewer padded tokens
    assert padding_waste([3, 3, 3], [[0, 1, 2]]) == 0.0
    assert padding_waste([1, 3], [[0, 1]]) == pytest.approx(2 / 6)


def test_sampler_validates():
    with pytest.raises(UsageError):
        LengthBucketSampler([1, 2], 0)
    with pytest.raises(UsageError):
        LengthBucketSampler([1, 2], 2, num_replicas=2, rank=2)


class Slow(Dataset):
    """Every item costs 5 ms of (sleeping) work: workers overlap it."""

    def __len__(self):
        return 4096

    def __getitem__(self, i):
        time.sleep(0.005)
        return torch.full((8,), float(i))


class Fast(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        return torch.full((8,), float(i))


def test_tune_loader_finds_that_workers_help_a_slow_dataset():
    # 2 s: two rounds at least of every setting; a 5 ms item makes the workers' gain far beyond noise
    choice = tune_loader(Slow(), batch_size=8, time_budget_s=2, max_workers=4, batches_per_trial=6)
    assert choice.kwargs["num_workers"] >= 2
    assert choice.gain is not None and choice.gain.ci95[0] > 1.0
    assert choice.verdict.startswith("use DataLoader(") and "num_workers" in choice.verdict
    base = choice.trials[0]
    assert base.kwargs == {"num_workers": 0} and base.batches_per_s > 0 and base.first_batch_ms > 0
    doc = choice.to_dict()
    assert doc["kind"] == "data" and doc["best"] == choice.kwargs


def test_tune_loader_keeps_the_defaults_when_nothing_helps():
    choice = tune_loader(Fast(), batch_size=64, time_budget_s=0.5, candidates=[{"num_workers": 0}],
                         batches_per_trial=10)  # two rounds at least, whatever the budget
    assert choice.kwargs == {"num_workers": 0} and choice.verdict.startswith("keep the defaults")


class Unpicklable(Slow):
    def __init__(self):
        self.handle = lambda x: x  # lambdas do not pickle


class Broken(Fast):
    def __getitem__(self, i):
        if torch.utils.data.get_worker_info() is not None:
            raise RuntimeError("cannot read shard in a worker")
        return super().__getitem__(i)


def test_an_unpicklable_dataset_falls_back_to_no_workers_with_the_reason():
    choice = tune_loader(Unpicklable(), batch_size=8, time_budget_s=2, max_workers=2, batches_per_trial=4,
                         multiprocessing_context="spawn")
    skipped = [t for t in choice.trials if t.status == "skipped"]
    assert skipped and all("cannot be pickled" in t.reason for t in skipped)
    assert choice.kwargs == {"num_workers": 0}
    assert any("pickled" in n for n in choice.notes)


def test_worker_errors_fail_that_setting_only():
    choice = tune_loader(Broken(), batch_size=8, time_budget_s=2, candidates=[{"num_workers": 0},
                                                                            {"num_workers": 1}], batches_per_trial=4)
    failed = choice.trials[1]
    assert failed.status == "failed" and "cannot read shard" in failed.reason
    assert choice.kwargs == {"num_workers": 0}


def test_stall_share_measures_waiting():
    loader = DataLoader(Slow(), batch_size=4)  # ~20 ms of loading per batch
    report = stall_share(loader, lambda batch: batch.sum(), steps=5)
    assert report.share > 0.8 and "add DataLoader workers" in report.recommendation
    quick = stall_share(DataLoader(Fast(), batch_size=4), lambda batch: time.sleep(0.02), steps=5)
    assert quick.share < 0.2


def test_cli_data(models_py, tmp_path):
    # the CLI runs the tuning in a process of its own: only a real `pitstop data` run proves that path
    data_py = tmp_path / "my_data.py"
    data_py.write_text("import time, torch\nfrom torch.utils.data import Dataset\n\n"
                       "class D(Dataset):\n    def __len__(self):\n        return 2048\n"
                       "    def __getitem__(self, i):\n        time.sleep(0.004)\n        return torch.zeros(4)\n\n"
                       "def make_dataset():\n    return D()\n\ndef broken():\n    raise OSError('no such shard')\n")
    out = subprocess.run([sys.executable, "-m", "pitstop", "data", f"{data_py}:make_dataset", "--batch-size", "8",
                          "--time-budget-s", "1", "--max-workers", "2", "--batches", "5", "--json",
                          str(tmp_path / "d.json")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "num_workers" in out.stdout and "batches/s" in out.stdout
    assert json.loads((tmp_path / "d.json").read_text())["kind"] == "data"
    bad = subprocess.run([sys.executable, "-m", "pitstop", "data", f"{data_py}:broken"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "no such shard" in bad.stderr and "Traceback" not in bad.stderr
