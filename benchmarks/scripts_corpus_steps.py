"""Run a training script as `__main__` and record the time of every optimizer step.

    python benchmarks/scripts_corpus_steps.py SCRIPT [ARGS...]

The script runs unmodified, in this interpreter, as `python SCRIPT ARGS` would run it (its folder first
on sys.path, `sys.argv` = [SCRIPT, *ARGS]). Before it starts, one global hook is registered with
`torch.optim.optimizer.register_optimizer_step_post_hook`: every `optimizer.step()` of any torch
optimizer (plain loops, GradScaler, Lightning, accelerate, the HF Trainer alike) appends
`<perf_counter seconds> <optimizer id> <optimizer class> <loss>` to the file named by `PITSTOP_CORPUS_STEPS`
(the loss: the sum of the scalars `backward()` was called on since the previous step, through a thin
wrapper of `torch.autograd.backward`)
(line-buffered, so a run killed by a timeout keeps its lines), and at exit one summary line goes to
stderr: `[scripts_corpus_steps] N steps, median X ms between steps of one optimizer`.

No sitecustomize, no import hooks: nothing else about the run changes. With `PITSTOP_CORPUS_SEED=k`
(k > 0), the run is seeded as `pitstop train`'s fp32 replica k is (`seed_with_offset`: every
generator seeded with k, and k added to every seed the script sets itself), so a script that seeds
itself still gives a different initialisation and data order: the reference seeds of the gate.
With `PITSTOP_CORPUS_MAX_STEPS=N`, the run ends (`SystemExit(0)` out of the N-th `optimizer.step()`)
after N optimizer steps: a bounded whole run of a script that loops until it is stopped (an RL loop
whose "solved" threshold is never reached).
"""

from __future__ import annotations

import atexit
import itertools
import os
import runpy
import statistics
import sys
import time
from typing import Any

PREFIX = "[scripts_corpus_steps]"


def step_times(lines: list[str]) -> dict[str, list[float]]:
    """Per optimizer (by id), the times of its steps, from the lines this wrapper writes."""
    per: dict[str, list[float]] = {}
    for line in lines:
        parts = line.split()
        if len(parts) >= 2:
            try:
                per.setdefault(parts[1], []).append(float(parts[0]))
            except ValueError:
                continue
    return per


def losses_of(lines: list[str]) -> list[float]:
    """The loss recorded at each step of the optimizer stepped most (the clock of one iteration)."""
    rows = [ln.split() for ln in lines if len(ln.split()) >= 4]
    if not rows:
        return []
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[1]] = counts.get(r[1], 0) + 1
    clock = max(counts, key=counts.__getitem__)
    out, pending = [], 0.0
    for r in rows:  # the losses of all optimizers' backward()s since the clock's previous step
        value = float(r[3])
        pending += value if value == value else 0.0
        if r[1] == clock:
            out.append(pending)
            pending = 0.0
    return out


def median_step_s(per: dict[str, list[float]], skip: int = 2) -> float | None:
    """Median time between two steps of the same optimizer (the one stepped most), first `skip` dropped.

    One interval per training iteration even where several optimizers step in it (a GAN's D and G)."""
    if not per:
        return None
    times = max(per.values(), key=len)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    gaps = gaps[skip:] or gaps
    return statistics.median(gaps) if gaps else None


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    script = os.path.abspath(sys.argv[1])
    import torch  # the hook needs torch; the script imports it anyway
    from torch.optim.optimizer import register_optimizer_step_post_hook

    path = os.environ.get("PITSTOP_CORPUS_STEPS")
    out = open(path, "a", buffering=1) if path else None
    per: dict[str, list[float]] = {}

    losses: list[Any] = []
    backward = torch.autograd.backward

    def recording(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(tensors, torch.Tensor) and tensors.numel() == 1:
            losses.append(tensors.detach())
        return backward(tensors, *args, **kwargs)

    torch.autograd.backward = recording

    cap = int(os.environ.get("PITSTOP_CORPUS_MAX_STEPS") or 0)

    def hook(optimizer: Any, args: Any, kwargs: Any) -> None:
        now = time.perf_counter()
        key = f"{id(optimizer):x}"
        per.setdefault(key, []).append(now)
        loss = sum(float(x) for x in losses) if losses else float("nan")
        losses.clear()
        if out is not None:
            out.write(f"{now:.6f} {key} {type(optimizer).__name__} {loss:.6g}\n")
        if cap and sum(map(len, per.values())) >= cap:
            raise SystemExit(0)

    register_optimizer_step_post_hook(hook)

    def summary() -> None:
        med = median_step_s(per)
        n = sum(map(len, per.values()))
        ms = f"{med * 1000:.1f} ms" if med is not None else "-"
        print(f"{PREFIX} {n} steps, median {ms} between steps of one optimizer", file=sys.stderr, flush=True)

    atexit.register(summary)
    seed = int(os.environ.get("PITSTOP_CORPUS_SEED") or 0)
    if seed:  # a reference seed of the gate, as pitstop train runs it (seed 0: the script's own seeds)
        from pitstop.train.script.sources import seed_with_offset

        seed_with_offset(seed)
    sys.argv = [script, *sys.argv[2:]]
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
