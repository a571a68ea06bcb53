"""What every worker process shares: the request loop (``serve``: plain messages ``(method,
kwargs)`` -> ``("ok", value)`` or ``("error", one_line, traceback_text)``), a model rebuilt from
the parent's source, and the CUDA-event timer. Each capability's session (bench's
``VariantSession``, train's ``TrainSession``, generate's) is what ``serve`` answers to."""

from __future__ import annotations

import time
import traceback
from typing import Any

try:
    import resource
except ImportError:  # not POSIX: page faults are not counted
    resource = None  # type: ignore[assignment]

import torch

from pitstop.engine.timer import CallTimer
from pitstop.errors import last_line

__all__ = ["CudaEventTimer", "faults", "load_module", "serve", "sync"]


class CudaEventTimer(CallTimer):
    """Times calls with CUDA events (GPU time, no host sync between calls)."""

    def times(self, n: int) -> list[float]:
        """Seconds of GPU time for each of ``n`` calls."""
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(n)]
        torch.cuda.synchronize()
        for start, end in events:
            start.record()
            out = self.fn()
            del out
            end.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) / 1000.0 for s, e in events]


def load_module(source: dict[str, Any], state_dict: dict[str, Any] | None, batch_size: int) -> torch.nn.Module:
    """Rebuild the parent's module: from its spec (then its exact weights) or from a pickle."""
    if source["kind"] == "pickle":
        return torch.load(source["path"], weights_only=False)  # noqa: PIT501 (our own file, written by the parent)
    from pitstop.models.spec import parse_model_spec

    module, _ = parse_model_spec(source["spec"]).build(batch_size, seed=source["seed"])
    if state_dict is not None:
        module.load_state_dict(state_dict)
    return module


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def faults() -> int:
    """Page faults of this process so far (minor + major), all threads (0 where not POSIX)."""
    if resource is None:
        return 0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt + usage.ru_majflt


def serve(conn: Any, session: Any) -> None:
    """Answer requests to ``session`` (bench's ``VariantSession``, train's, generate's) until
    ``exit`` or the parent goes away. The first message says the worker is up (imports done) and
    when, by the machine-wide monotonic clock: start-up under load does not count against a
    request's time-out."""
    conn.send(("ready", time.monotonic()))
    while True:
        try:
            method, kwargs = conn.recv()
        except (EOFError, OSError):
            return
        if method == "exit":
            return
        try:
            reply: tuple[Any, ...] = ("ok", getattr(session, method)(**kwargs))
        except BaseException as exc:  # report everything, including SystemExit from user code
            reply = ("error", last_line(exc), traceback.format_exc())
        conn.send(reply)
