"""The verdict: causes found in the measurements, ranked by the step time each fix would save.

A cause is one function of (phase shares, syncs, observations, hardware) that returns its entry
or None. ``share``: the measured share of the step the cause concerns; ``saves``: the share a fix
is expected to save (the measured share times what the fix typically recovers: all of a data
wait that workers hide, all of a sync's wait, half of a for-loop optimizer, ...), which orders
the list. Every action names the pitstop command that measures the fix on this model.

The catalogue (``CAUSES``): the issue's seven plus ``zero-grad-in-place``,
``conv-bias-before-bn``, ``cudnn-benchmark-off`` and ``page-faults`` (the step's temporaries mapped
afresh by the C allocator every step; its share is an estimate: the faults counted times one
fault's cost measured on this machine)."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Any

from pitstop.profile.faults import HOLD
from pitstop.profile.observe import Observations

CAUSES = ("input-bound", "sync-bound", "optimizer-bound", "compute-fp32", "debug-mode", "threads-oversubscribed",
          "compute-bound", "zero-grad-in-place", "conv-bias-before-bn", "cudnn-benchmark-off", "page-faults")
INPUT, SYNC, OPTIMIZER, COMPUTE = 0.15, 0.10, 0.20, 0.40  # shares of the step from which a phase is the cause
FAULTS = 0.05  # the estimated share of the step in minor page faults from which they are a cause


@dataclass(frozen=True)
class Facts:
    """Everything the causes read: phase shares (None: not measured), syncs, the run's observations
    and the hardware."""

    shares: dict[str, float | None]
    syncs: list[dict[str, Any]]
    observed: Observations
    native_bf16: bool
    physical_cores: int
    cudnn_benchmark: bool
    step_ms: float
    train_command: str = "pitstop train train.py"  # the runnable command: this script, its own arguments
    page_faults: dict[str, Any] | None = None  # {"per_step", "us_each", "ms_per_step", "share"} (faults.py)

    @property
    def train(self) -> str:
        """``pitstop train SCRIPT ARGS`` as a command to paste."""
        return f"`{self.train_command}`"

    def share(self, *phases: str) -> float:
        return sum(self.shares.get(p) or 0.0 for p in phases)


def _entry(cause: str, share: float, saves: float, evidence: str, action: str) -> dict[str, Any]:
    return {"cause": cause, "share": share, "saves": saves, "evidence": evidence, "action": action}


def input_bound(f: Facts) -> dict[str, Any] | None:
    share = f.share("data")
    if share < INPUT:
        return None
    o = f.observed
    loader = f"{o.dataset or 'the Dataset'}" + (f", batch size {o.batch_size}" if o.batch_size else "")
    evidence = f"{share:.0%} of each step waits for the DataLoader ({loader}; num_workers={o.workers})"
    if o.workers == 0 and o.dataset == "TensorDataset" and (o.batch_size or 0) > 1:
        return _entry("input-bound", share, 0.8 * share, evidence + ": the tensors are in memory, indexed one "
                      f"sample at a time ({o.batch_size} __getitem__ calls and a collate per batch)",
                      "index a batch at a time, no worker needed: DataLoader(dataset, batch_size=None, "
                      f"sampler=BatchSampler(RandomSampler(dataset), batch_size={o.batch_size}, drop_last=False)) "
                      "(a TensorDataset takes a list of indices); pitstop profile again measures it; "
                      f"{f.train} measures loader workers x threads inside the script")
    spare = f.physical_cores - o.threads
    if o.workers == 0 and spare <= 0:
        return _entry("input-bound", share, 0.3 * share, evidence + f"; torch computes on {o.threads} threads of "
                      f"{f.physical_cores} physical cores, so loader workers would compete with it",
                      "make __getitem__ and the collate cheaper first (workers have no core of their own here); "
                      f"{f.train} measures loader workers against torch's threads inside the script (the "
                      "cores they share) and hands back the faster as a patch")
    return _entry("input-bound", share, 0.9 * share, evidence,
                  f"{f.train} measures the training DataLoader's num_workers (persistent, with torch's threads; "
                  "pin_memory on CUDA) inside the script and hands back the fastest that trains the same as a patch")


def sync_bound(f: Facts) -> dict[str, Any] | None:
    waited = sum(r["ms"] for r in f.syncs) / f.step_ms if f.step_ms > 0 else 0.0
    share = max(f.share("sync"), min(waited, 1.0))
    if share < SYNC or not f.syncs:
        return None
    lines = ", ".join(f"{r['where']} {r['kind']} x{r['per_step']:.3g}/step" for r in f.syncs[:3])
    return _entry("sync-bound", share, share, f"{share:.0%} of each step waits in host-device syncs: {lines}",
                  f"remove the syncs at {', '.join(r['where'] for r in f.syncs[:3])} from the step (keep values on "
                  "the device, read them every N steps); pitstop profile again measures the change")


def optimizer_bound(f: Facts) -> dict[str, Any] | None:
    share = f.share("optimizer")
    slow = [o for o in f.observed.optimizers if o["impl"] == "for-loop" and o["params"] >= 16
            and o["median_numel"] <= 1 << 16]
    if share < OPTIMIZER or not slow:
        return None
    o = slow[0]
    return _entry("optimizer-bound", share, 0.5 * share,
                  f"{share:.0%} of each step is {o['label']}.step(), a for-loop over {o['params']} parameters "
                  f"(median {o['median_numel']} elements)",
                  f"{o['label']}(..., foreach=True) or fused=True; {f.train} measures for-loop, foreach and fused "
                  "optimizers inside this script and hands back the patch")


def compute_fp32(f: Facts) -> dict[str, Any] | None:
    o, share = f.observed, f.share("forward", "backward")
    fp32 = o.params["fp32"] > 0 and o.params["low"] == 0
    if share < COMPUTE or o.autocast or not fp32 or not f.native_bf16:
        return None
    return _entry("compute-fp32", share, 0.3 * share,
                  f"{share:.0%} of each step is forward and backward in float32, on a {o.device.upper()} with "
                  "native bfloat16", f"{f.train} measures bf16 autocast and torch.compile inside this script, gated "
                  "on training the same, and hands back the patch")


def debug_mode(f: Facts) -> dict[str, Any] | None:
    o, share = f.observed, f.share("forward", "backward")
    if not (o.anomaly or o.autograd_profiler):
        return None
    what = " and ".join(w for w, on in (("anomaly detection", o.anomaly), ("the autograd profiler",
                                                                           o.autograd_profiler)) if on)
    return _entry("debug-mode", share, 0.5 * share, f"{what} left on during training (forward and backward: "
                  f"{share:.0%} of each step)", "turn off torch.autograd.set_detect_anomaly / "
                  "torch.autograd.profiler outside debugging; pitstop profile again measures the change")


def threads_oversubscribed(f: Facts) -> dict[str, Any] | None:
    o, share = f.observed, f.share("forward", "backward", "optimizer")
    busy = o.threads * max(o.workers, 1)
    if busy <= f.physical_cores:
        return None
    strong = o.threads > f.physical_cores  # the compute threads alone fight over the cores
    return _entry("threads-oversubscribed", share, (0.3 if strong else 0.05) * share,
                  f"torch uses {o.threads} threads x {max(o.workers, 1)} process(es) on {f.physical_cores} "
                  "physical cores", f"torch.set_num_threads({max(1, f.physical_cores // max(o.workers, 1))}) "
                  "(threads x DataLoader workers <= physical cores); pitstop bench --threads measures the thread "
                  "count, pitstop data the workers")


def zero_grad_in_place(f: Facts) -> dict[str, Any] | None:
    if not f.observed.zero_in_place:
        return None
    share = f.share("optimizer", "backward")
    return _entry("zero-grad-in-place", share, 0.02 * share, "gradients are zeroed in place "
                  "(zero_grad(set_to_none=False)) and then added to", "optimizer.zero_grad() with set_to_none=True "
                  f"(the default): {f.train} measures set_to_none inside this script")


def conv_bias_before_bn(f: Facts) -> dict[str, Any] | None:
    pairs = f.observed.conv_bias_bn
    if not pairs:
        return None
    share = f.share("forward", "backward")
    names = ", ".join(f"{c} -> {b}" for c, b in pairs[:3])
    return _entry("conv-bias-before-bn", share, 0.01 * share, f"a conv's bias feeds a BatchNorm directly ({names}): "
                  "the BatchNorm subtracts it again", "bias=False on those convs; pitstop profile again "
                  "measures the change")


def cudnn_benchmark_off(f: Facts) -> dict[str, Any] | None:
    o = f.observed
    if o.device != "cuda" or not o.has_conv or not o.fixed_shapes or f.cudnn_benchmark:
        return None
    share = f.share("forward", "backward")
    return _entry("cudnn-benchmark-off", share, 0.1 * share, "convolutions on CUDA with fixed input shapes and "
                  "torch.backends.cudnn.benchmark off", "torch.backends.cudnn.benchmark = True before training; "
                  f"{f.train} measures the step techniques inside this script")


def page_faults(f: Facts) -> dict[str, Any] | None:
    return faults_entry(f.page_faults, f.train_command)


def _profile_command(train_command: str) -> str:
    """The profiled command again, from the train command: the script's arguments as profile took
    them (the ``--`` that keeps a script's ``--steps`` from ``pitstop train`` is not needed there)."""
    import shlex

    try:
        tokens = shlex.split(train_command)
    except ValueError:
        return train_command.replace("pitstop train", "pitstop profile", 1)
    if tokens[:2] != ["pitstop", "train"]:
        return train_command
    if tokens[3:4] == ["--"]:
        del tokens[3]
    return shlex.join(["pitstop", "profile", *tokens[2:]])


def faults_entry(pf: dict[str, Any] | None, train_command: str) -> dict[str, Any] | None:
    """``page-faults`` from a report's ``page_faults`` (``faults.summary``), or None under ``FAULTS``."""
    share = (pf or {}).get("share")
    if pf is None or share is None or share < FAULTS:
        return None
    profile = _profile_command(train_command)
    hold = " ".join(f"{k}={v}" for k, v in HOLD.items())
    glibc = platform.libc_ver()[0] == "glibc"
    evidence = (f"~{pf['per_step']:.0f} minor page faults in each step (the median), {pf['us_each']:.2g} us each as "
                f"measured on this machine: ~{pf['ms_per_step']:.3g} ms, an estimated {share:.0%} of the step. Large "
                "temporaries are mapped afresh and handed back to the kernel every step" + (
                    " (glibc's malloc maps every block over its mmap threshold, a threshold it moves as the process "
                    "frees memory: the same job can fault or not from one run to the next)" if glibc else ""))
    action = ("keep them in the allocator's heap: " + (
        f"`{hold} {profile}` measures it (glibc keeps blocks up to 256 MiB in its heap and trims it only over "
        "1 GiB; set the same two variables for the training run), or " if glibc else "")
              + "preload a caching allocator (LD_PRELOAD=libjemalloc.so or libtcmalloc.so), as PyTorch's CPU "
                "performance tuning guide advises")
    return _entry("page-faults", share, 0.8 * share, evidence, action)


def compute_bound(f: Facts, found: list[dict[str, Any]]) -> dict[str, Any] | None:
    share = f.share("forward", "backward")
    if share < 0.5 or any(v["cause"] in ("compute-fp32", "debug-mode", "threads-oversubscribed") for v in found):
        return None
    return _entry("compute-bound", share, 0.0, f"{share:.0%} of each step is forward and backward, already in its "
                  "best precision: nothing obvious left", f"{f.train} measures torch.compile and the other step "
                  "techniques inside this script; the top ops per phase show where the compute goes")


RULES = (input_bound, sync_bound, optimizer_bound, compute_fp32, debug_mode, threads_oversubscribed,
         zero_grad_in_place, conv_bias_before_bn, cudnn_benchmark_off, page_faults)


def verdict(facts: Facts) -> list[dict[str, Any]]:
    """The causes found, the largest expected saving first."""
    found = [v for v in (rule(facts) for rule in RULES) if v is not None]
    extra = compute_bound(facts, found)
    found += [extra] if extra else []
    return sorted(found, key=lambda v: -v["saves"])
