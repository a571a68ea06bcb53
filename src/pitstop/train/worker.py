"""The training-variant session: everything that runs one variant's training steps, inside its
own worker process (``python -m pitstop.train.worker FD``, the bench protocol) or inline.

The session executes the recipe's source (what the user will paste), checks the step-1 gradients
on the first call (where compilation happens), runs the trajectory from the initial weights, then
times steps on request. Every step really trains: the weights move on as in a real run."""

from __future__ import annotations

import copy
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from pitstop.engine.peak import peak_bytes
from pitstop.engine.recipe import build
from pitstop.engine.timer import CallTimer, TimingPolicy
from pitstop.engine.worker import CudaEventTimer, load_module
from pitstop.engine.worker import serve as serve_session
from pitstop.train.clock import InStep
from pitstop.train.fidelity import gradient_report


class TrainSession:
    """One training variant of one model at one batch size."""

    def setup(self, payload_path: str, recipe: str, threads: int, device: str, policy: dict[str, Any],
              seed: int = 0, module: torch.nn.Module | None = None, workdir: str | None = None) -> dict[str, Any]:
        """Load model, batch and reference gradients; nothing of the variant runs yet."""
        self.threads_before = torch.get_num_threads()
        torch.set_num_threads(threads)
        payload = torch.load(payload_path, weights_only=True)
        self.device = torch.device(device)
        self.module = module if module is not None else load_module(payload["source"], payload.get("state_dict"),
                                                                    payload["batch_size"])
        args, kwargs = tuple(payload["args"]), dict(payload.get("kwargs") or {})
        self.batch = ((*args, kwargs) if kwargs else args, payload["target"])
        self.reference = payload["reference_grads"]
        self.recipe, self.seed = recipe, seed
        self.policy = TimingPolicy(**policy)
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="pitstop-train-"))
        self.steps = self.skipped = 0
        return {"threads": torch.get_num_threads()}

    def inspect(self, job: dict[str, Any], workdir: str, module: torch.nn.Module | None = None,
                inputs: Any = None, target: Any = None) -> dict[str, Any]:
        """The first look at the model (``pitstop.train.inspect``): ``{"ok": info}``, or
        ``{"error": {"kind", "message"}}`` for a problem the user must fix or a failing reference."""
        from pitstop.train.inspect import InspectError
        from pitstop.train.inspect import inspect as look

        self.threads_before = torch.get_num_threads()
        torch.set_num_threads(int(job["threads"]))
        try:
            return {"ok": look(job, Path(workdir), module, inputs, target)}
        except InspectError as exc:
            return {"error": {"kind": exc.kind, "message": str(exc), "field": exc.field}}
        finally:
            self.restore()

    def prepare(self) -> dict[str, Any]:
        """Apply the recipe and run the first forward and backward (compilation happens here,
        timed together); its gradients, unscaled, are compared with the fp32 reference."""
        start = time.perf_counter()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.ns = build(self.recipe, self.workdir / "recipe.py", name="pitstop_train_recipe")
        module = copy.deepcopy(self.module)
        names = {id(p): n for n, p in module.named_parameters()}
        self.model, self.optimizer = self.ns["apply"](module)
        torch.manual_seed(self.seed)
        self.optimizer.zero_grad(set_to_none=True)
        self.ns["forward_backward"](self.model, self.batch)
        _sync(self.device)
        first_s = time.perf_counter() - start
        scale = self.scale() or 1.0
        params = {names[id(p)]: p for group in self.optimizer.param_groups for p in group["params"] if id(p) in names}
        grads = {n: None if p.grad is None else p.grad.detach().cpu().float() / scale for n, p in params.items()}
        self.optimizer.zero_grad(set_to_none=True)
        train_step, model, optimizer, batch = self.ns["train_step"], self.model, self.optimizer, self.batch
        self.cpu: list[float] = []  # the process's CPU seconds per step (what other processes do not move)
        self.opt: list[float] = []  # seconds inside optimizer.step() per step (CPU only: CUDA's runs async)
        in_step = _optimizer_clock(optimizer) if self.device.type == "cpu" else None

        def step() -> torch.Tensor:
            start = time.process_time()
            loss = self._counted(train_step(model, optimizer, batch))
            self.cpu.append(time.process_time() - start)
            if in_step is not None:
                self.opt.append(in_step.pop())
            return loss

        self.fn = step
        cuda = self.device.type == "cuda"
        self.timer = CudaEventTimer(self.fn, sync=torch.cuda.synchronize) if cuda else CallTimer(self.fn)
        return {"first_call_s": first_s, "gradients": gradient_report(grads, self.reference),
                "details": dict(self.ns.get("DETAILS", {}))}

    def scale(self) -> float | None:
        """The GradScaler's current scale (None without one)."""
        scaler = self.ns.get("SCALER")
        return float(scaler.get_scale()) if scaler is not None else None

    def _counted(self, loss: torch.Tensor) -> torch.Tensor:
        """Count steps, and the ones GradScaler skipped (its scale went down)."""
        self.steps += 1
        scale = self.scale()
        if scale is not None:
            if scale < getattr(self, "last_scale", scale):
                self.skipped += 1
            self.last_scale = scale
        return loss

    def trajectory(self, steps: int) -> dict[str, Any]:
        """``steps`` training steps from the initial weights (seeded): each loss and each time.
        It doubles as the warm-up of the timed steps that follow."""
        torch.manual_seed(self.seed)
        losses, times = [], []
        for _ in range(steps):
            _sync(self.device)
            start = time.perf_counter()
            loss = self.fn()
            _sync(self.device)
            times.append(time.perf_counter() - start)
            losses.append(float(loss))
        tail = sorted(times[-5:])
        return {"losses": losses, "times": times, "per_call_s": tail[len(tail) // 2], "seed": self.seed,
                "skipped": self.skipped, "steps": self.steps}

    def warmup(self) -> dict[str, Any]:
        """Warm up until step times settle (when no trajectory ran)."""
        return vars(self.timer.warmup(self.policy))

    def run(self, n: int) -> dict[str, Any]:
        """Seconds for each of ``n`` timed steps, and GradScaler's skips so far."""
        before, opt_before = len(self.cpu), len(self.opt)
        times = self.timer.times(n)
        return {"times": times, "cpu_times": self.cpu[before:][-len(times):],
                "optimizer_times": self.opt[opt_before:][-len(times):], "skipped": self.skipped,
                "steps": self.steps}

    def memory(self) -> dict[str, Any]:
        """Peak memory of one training step."""
        peak, method = peak_bytes(self.fn, self.device)
        return {"peak_memory_bytes": peak, "peak_memory_method": method}

    def restore(self) -> None:
        """Give back the thread count (inline sessions share the process)."""
        if hasattr(self, "threads_before"):
            torch.set_num_threads(self.threads_before)


def _optimizer_clock(optimizer: torch.optim.Optimizer) -> InStep | None:
    """Hooks timing ``optimizer.step()`` (None for an optimizer without step hooks)."""
    if not hasattr(optimizer, "register_step_pre_hook"):
        return None
    clock = InStep()
    optimizer.register_step_pre_hook(clock.pre)
    optimizer.register_step_post_hook(clock.post)
    return clock


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def serve(conn: Any) -> None:
    """Answer requests with a ``TrainSession``: the bench worker's loop and protocol."""
    serve_session(conn, TrainSession())


def main(argv: list[str]) -> None:
    """Entry point of a worker process: ``python -m pitstop.train.worker FD``."""
    from multiprocessing.connection import Connection

    from pitstop._exit import collect_and_freeze

    serve(Connection(int(argv[1])))
    collect_and_freeze()


if __name__ == "__main__":
    main(sys.argv)
