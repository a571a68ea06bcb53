"""The harness's own overhead: pitstop's timing (rounds driven over IPC from the parent, a
``perf_counter`` pair per call) vs a bare ``torch.utils.benchmark.Timer`` loop over the same
callable, interleaved in one run.

Both run inside the same pitstop worker process, on the same prepared eval+no_grad callable,
alternating ``--repeats`` times: one stretch of pitstop rounds (a request per ~50 ms round,
as in a real bench), then one ``Timer.blocked_autorange`` of the same length. Sharing the
process removes process-to-process differences (allocator state, memory layout), which on
this VM reach several percent between fresh processes and would otherwise swamp the effect.

Printed per model: pitstop's reported median (per call) and the Timer's (median of block
means), their ratio with a bootstrap 95% interval, and the like-for-like ratio of pitstop's
per-round means to the Timer's block means. Usage:

    python benchmarks/harness_overhead.py [--repeats 5] [--seconds 2]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from pitstop._env import physical_cores
from pitstop.bench.launch import BenchProcessWorker as ProcessWorker
from pitstop.bench.variants.config import VariantConfig
from pitstop.engine.source import SpecSource, write_payload
from pitstop.engine.timer import TimingPolicy, chunk_size
from pitstop.models.spec import parse_model_spec
from pitstop.stats import speedup

CASES = [("zoo:mlp", 16), ("zoo:cnn", 16), ("zoo:transformer", 8)]
CONFIG = VariantConfig("eval", "no_grad")


def call(worker: ProcessWorker, method: str, **kwargs: object) -> object:
    worker.send(method, **kwargs)
    return worker.receive(600)


def measure(spec: str, batch: int, threads: int, repeats: int, seconds: float) -> dict[str, list[float]]:
    policy = TimingPolicy(budget_s=seconds)
    source = SpecSource(parse_model_spec(spec), None)
    module, inputs = source.materialize(batch)
    with tempfile.TemporaryDirectory() as tmp:
        payload = Path(tmp) / "payload.pt"
        write_payload(payload, source.worker_source(module, Path(tmp))[0], module, inputs, batch, send_weights=True)
        worker = ProcessWorker(Path(tmp) / "worker.log", threads)
        try:
            call(worker, "setup", payload_path=str(payload), config=CONFIG.to_dict(threads), threads=threads,
                 device="cpu", policy=policy.to_dict())
            per_call = call(worker, "warmup")["per_call_s"]  # type: ignore[index]
            ours, rounds, bare = [], [], []
            for _ in range(repeats):
                spent = 0.0
                while spent < seconds:  # pitstop's way: one request per round
                    times = call(worker, "run", n=chunk_size(per_call, policy))["times"]  # type: ignore[index]
                    ours += times
                    rounds.append(float(np.mean(times)))
                    spent += sum(times)
                bare += call(worker, "bare_timer", seconds=seconds)  # type: ignore[operator]
        finally:
            worker.close()
    return {"ours": ours, "rounds": rounds, "bare": bare}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    threads = physical_cores()
    for spec, batch in CASES:
        m = measure(spec, batch, threads, args.repeats, args.seconds)
        reported = speedup(m["bare"], m["ours"])  # bare / ours: < 1 means pitstop measured slower
        like = speedup(m["bare"], m["rounds"])
        change, lo, hi = 1 / reported.median - 1, 1 / reported.ci95[1] - 1, 1 / reported.ci95[0] - 1
        like_change = 1 / like.median - 1
        print(f"{spec} b={batch} eval+no_grad, {threads} threads, same worker process, {args.repeats} alternations: "
              f"pitstop median {np.median(m['ours']) * 1e3:.3f} ms (n={len(m['ours'])} calls), "
              f"bare Timer {np.median(m['bare']) * 1e3:.3f} ms (n={len(m['bare'])} blocks): "
              f"harness changes the median by {change:+.2%} [95% CI {lo:+.2%} to {hi:+.2%}] "
              f"({'within noise' if reported.verdict == 'within noise' else 'significant'}); "
              f"like for like (round means vs block means) {like_change:+.2%}")


if __name__ == "__main__":
    main()
