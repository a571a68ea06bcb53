"""A script variant's process: ``python -m pitstop.train.script.child FD``.

It speaks the worker protocol of ``pitstop.bench`` (``("ready", t)``, then one reply per request)
while the user's script runs in its main thread: the first request, ``setup``, starts the script
with the variant's edited sources; pitstop's requests are answered at the pauses the ``Probe``
makes (before the first training forward, then at step boundaries): ``prepare`` runs step 1 (where
compilation happens) and checks its gradients, ``trajectory`` / ``warmup`` / ``run`` run more
steps, ``memory`` and ``discover`` answer at once, ``exit`` ends the process. The script's own
end, or its crash, answers the pending request with the reason."""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pitstop.errors import last_line
from pitstop.train.script import amp

STEP_REQUESTS = ("prepare", "trajectory", "warmup", "run")
WAITED = 0.1  # a step that waited this share of its time for its batch: the loader's queue was empty


class Server:
    """Answers pitstop's requests at the script's pauses."""

    def __init__(self, conn: Connection, job: dict[str, Any]) -> None:
        from pitstop.train.script.probe import Probe

        self.conn, self.job = conn, job
        self.pending: str | None = "setup"
        self.budget = 0
        self.mark = 0  # steps done when the pending request started (its timed steps: after the mark)
        self.drain = self.refill = 0  # a turn's untimed steps left (``_draining``), and how many more may follow
        self.first_start = 0.0
        self.probe = Probe(self.on_pause, bool(job.get("discover")))
        self.probe.fill_cache, self.probe.cache_check = bool(job.get("fill_cache")), bool(job.get("check_cache"))
        self.counted: dict[str, Any] = {}
        self.flop_mode: Any = None

    # -- pauses ---------------------------------------------------------------------------------

    def on_pause(self, where: str, probe: Any) -> None:
        """Called by the probe; returns when the script may run on."""
        if where == "step":
            self._after_step()
            if self._draining():
                return
            if self.budget > 0:
                self.budget -= 1
                if self.budget > 0:
                    return
        self._reply(self._answer(where))
        self._serve()

    def _serve(self) -> None:
        """Requests until one needs the script to run steps."""
        while True:
            try:
                method, kwargs = self.conn.recv()
            except (EOFError, OSError):
                _exit(0)
            if method == "exit":
                _exit(0)
            if method in STEP_REQUESTS:
                self.pending, self.mark = method, self.probe.steps
                self.budget = self._steps_for(method, kwargs)
                if method == "run" and self.probe.loader_queue:  # batches the loader's workers made while this
                    # process waited for its turn: drained untimed, or the turn times a queue, not the pipeline
                    self.drain = self.refill = self.probe.loader_queue
                self.first_start = time.perf_counter()
                if self.budget <= 0:
                    self._reply(self._answer("step"))
                    continue
                self._before_step()
                return
            self.pending = method
            try:
                self._reply(getattr(self, f"do_{method}")(**kwargs))
            except Exception as exc:
                self.conn.send(("error", last_line(exc), traceback.format_exc()))

    def _draining(self) -> bool:
        """Whether the step just ended was one of a turn's untimed steps. First the batches the loader's
        workers made while this process waited for its turn (``loader_queue``); then, while a step
        still found its batch ready, up to as many again: workers slower than the step refill the queue
        during the drain, and timed from there a turn's first steps were free (a BERT loop tokenizing in
        one worker: 123 ms a step in the probe, 145 ms in its whole runs). The turn is timed from the
        first step that waited for its batch (the pipeline's own rate), or after the second allowance."""
        if self.drain <= 0:
            return False
        probe = self.probe
        self.drain -= 1
        waited = bool(probe.step_times) and probe.step_data[-1] > WAITED * probe.step_times[-1]
        if self.drain == 0 and self.refill > 0 and not waited:
            self.drain, self.refill = 1, self.refill - 1
        if self.drain == 0:
            self.mark = probe.steps  # the turn's timed steps start with the next
        return True

    def _steps_for(self, method: str, kwargs: dict[str, Any]) -> int:
        if method == "prepare":
            return 1
        if method == "trajectory":
            return int(kwargs["steps"]) - self.probe.steps
        if method == "warmup":
            return 3
        return int(kwargs.get("n", 1))

    def _reply(self, value: Any) -> None:
        self.conn.send(("ok", value))
        self.pending = None

    # -- answers --------------------------------------------------------------------------------

    def _answer(self, where: str) -> Any:
        probe = self.probe
        if self.pending == "setup":
            return {"threads": _threads(), "steps": probe.steps}
        done = probe.step_times[self.mark:]
        if self.pending == "prepare":
            return {"first_call_s": done[0] if done else None, "gradients": self._gradients(),
                    "details": {"first_step_loss": probe.step_losses[0] if probe.step_losses else None,
                                "before_first_step_s": probe.before_start_s,
                                **({"cache_fill_s": round(probe.fill_s, 4)} if probe.filled else {})}}
        if self.pending == "trajectory":
            losses = probe.step_losses[:len(probe.step_losses)]
            tail = sorted(probe.step_times[-5:])
            return {"losses": losses, "times": list(probe.step_times), "per_call_s": tail[len(tail) // 2],
                    "seed": self.job.get("seed", 0), "skipped": amp.skipped(), "steps": probe.steps}
        training, cpu, opt, data = self._training_times()
        if self.pending == "warmup":
            return {"per_call_s": statistics.median(training or done), "calls": len(done)}
        return {"times": training, "cpu_times": cpu, "optimizer_times": opt, "data_times": data,
                "skipped": amp.skipped(), "steps": probe.steps, "eval_steps": len(done) - len(training)}

    def _training_times(self) -> tuple[list[float], list[float], list[float], list[float]]:
        """The pending request's step times, CPU times, seconds in ``optimizer.step()`` and seconds
        waiting for a batch, the steps spent mostly in an evaluation (no_grad, inference_mode: a
        validation loop between two steps) left out, unless most were."""
        probe = self.probe
        m = self.mark
        rows: list[tuple[Any, ...]] = list(zip(probe.step_times[m:], probe.step_cpu[m:], probe.step_opt[m:],
                                               probe.eval_steps[m:], probe.step_data[m:], strict=False))
        kept = [r for r in rows if not r[3]]
        chosen = kept if len(kept) * 2 >= len(rows) else rows
        if probe.loader_queue and chosen:  # workers hand over batches in bursts (with 2 workers every other one
            # is ready while the next waits for a whole batch): a step's time is the turn's mean, its rate
            chosen = [tuple(sum(r[i] for r in chosen) / len(chosen) for i in range(len(chosen[0])))] * len(chosen)
        opt = [r[2] for r in chosen]
        return ([r[0] for r in chosen], [r[1] for r in chosen], opt if all(math.isfinite(x) for x in opt) else [],
                [r[4] for r in chosen])

    def _gradients(self) -> dict[str, Any]:
        """Step 1's gradients: the discovery run keeps them as the reference; a variant compares."""
        import torch

        from pitstop.train.fidelity import gradient_report

        path = self.job.get("reference")
        if not path:
            return {}
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # each rank of a torchrun job has its own shard's gradients
            path = f"{path}.rank{os.environ.get('RANK', '0')}"
        if self.job.get("discover"):
            torch.save(self.probe.first_grads, path)
            return {}
        reference = torch.load(path, weights_only=True)
        return gradient_report(self.probe.first_grads, reference)

    def do_memory(self) -> dict[str, Any]:
        """Peak memory: CUDA's allocator peak where CUDA ran, else the process's peak RSS."""
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return {"peak_memory_bytes": int(torch.cuda.max_memory_allocated()), "peak_memory_method": "cuda"}
        import resource

        return {"peak_memory_bytes": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024,
                "peak_memory_method": "peak RSS of the process"}

    def do_peaks(self) -> dict[str, Any]:
        """This machine's matmul peaks at the script's thread count (for MFU)."""
        from pitstop.train.peaks import machine

        forward = (self.probe.sites.get("forward") or {})
        return machine(str(forward.get("device", "cpu")))

    def do_discover(self) -> dict[str, Any]:
        """Where the training step lives, and what one step costs (discovery run only)."""
        import torch

        probe = self.probe
        from pitstop.train.script.run_length import run_length

        return {"sites": probe.sites, "trainers": self.watch.found, "steps": probe.steps,
                "run_length": run_length(probe, self.watch), "backwards_per_step": probe.backwards_per_step,
                "losses": probe.step_losses, "times": probe.step_times, "data_times": probe.step_data,
                "eval_steps": probe.eval_steps, "clock": type(probe.clock).__name__,
                "optimizers": [type(o).__name__ for o in probe.optimizers], "threads": torch.get_num_threads(),
                **self.counted}

    # -- FLOPs and top ops of one step (discovery) ----------------------------------------------

    def _before_step(self) -> None:
        if self.job.get("discover") and self.probe.steps == 1 and "flops" not in self.counted:
            from torch.utils.flop_counter import FlopCounterMode

            self.flop_mode = FlopCounterMode(display=False)
            self.flop_mode.__enter__()

    def _after_step(self) -> None:
        mode = getattr(self, "flop_mode", None)
        if mode is not None:
            mode.__exit__(None, None, None)
            self.flop_mode = None
            self.counted["flops_per_step"] = int(mode.get_total_flops())
            self.counted["flop_step"] = self.probe.steps

    # -- the script -----------------------------------------------------------------------------

    def run(self) -> None:
        """Seed, hook, and run the script as ``python SCRIPT ARGS`` would; then answer what is pending."""
        from pitstop.train.script.sources import EditedSources, seed_with_offset
        from pitstop.train.script.trainers import TrainerWatch

        job = self.job
        if job.get("threads"):  # a busy machine: measured on this many threads (the script may set its own later)
            import torch

            torch.set_num_threads(int(job["threads"]))
        seed_with_offset(int(job.get("seed", 0)))
        EditedSources(job.get("sources", {})).install()
        self.watch = TrainerWatch()
        self.watch.install()
        self.probe.install()
        error = None
        try:
            run_script(job["script"], list(job.get("args", ())), job.get("sources", {}))
        except SystemExit as exc:
            if exc.code not in (None, 0):
                error = f"the script exited with code {exc.code}"
        except BaseException as exc:  # the script's own crash: its traceback in the log, the reason to pitstop
            traceback.print_exc()
            error = f"the script raised {last_line(exc)}{_where(exc)}"
        self._ended(error)

    def _no_step(self) -> str:
        """Why a script that ended on its own never stepped: what it did do in this process."""
        backwards = len(self.probe.losses)
        if backwards:
            return (f"the script called backward() {backwards} time(s) but never stepped a torch.optim optimizer "
                    "(parameters updated by hand?): script mode edits and times the optimizer's step; build one "
                    "(e.g. torch.optim.SGD(model.parameters(), lr=...)) and call its step()")
        if self.probe.started:
            return "the script ran a forward with gradients but no backward() and no optimizer step in its own process"
        return ("the script ended without training in its own process (no forward with gradients, no backward(), "
                "no optimizer step): a loop in worker processes (torch.multiprocessing, hogwild) is not seen")

    def _ended(self, error: str | None) -> None:
        """The script is over: answer the pending request with why, then serve what is left."""
        steps = self.probe.steps
        why = error or (f"the script ended after {steps} optimizer step(s)" if steps else self._no_step())
        if self.pending == "run" and error is None:  # timed steps cut short: what was timed still counts
            times, cpu, opt, data = self._training_times()
            self._reply({"times": times, "cpu_times": cpu, "optimizer_times": opt, "data_times": data,
                         "skipped": amp.skipped(), "steps": steps, "ended": True})
        elif self.pending is not None:
            wanted = "; pitstop needed more: give arguments that train longer (e.g. more iterations)" \
                if error is None and steps and self.pending in STEP_REQUESTS else ""
            self.conn.send(("error", why + wanted, ""))
            self.pending = None
        while True:  # answer the immediate requests (discover, memory) until told to exit
            try:
                method, kwargs = self.conn.recv()
            except (EOFError, OSError):
                _exit(0)
            if method == "exit":
                _exit(0)
            if method in STEP_REQUESTS:
                self.conn.send(("error", why, ""))
                continue
            try:
                self.conn.send(("ok", getattr(self, f"do_{method}")(**kwargs)))
            except Exception as exc:
                self.conn.send(("error", last_line(exc), traceback.format_exc()))


def run_script(path: str, args: list[str], sources: dict[str, str]) -> None:
    """Execute the script as ``__main__`` (its edited source when it has one), with its own argv,
    its folder first on sys.path and an absolute ``__file__``."""
    import builtins
    import importlib.machinery
    import types

    from pitstop._optional import quiet_torchao

    quiet_torchao()  # a transformers script imports torchao: no warnings about binaries that cannot load
    file = os.path.realpath(path)
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(file))
    text = sources.get(file) or Path(file).read_bytes()
    code = compile(text, file, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=file, __cached__=None, __builtins__=builtins,
                           __loader__=importlib.machinery.SourceFileLoader("__main__", file))
    sys.modules["__main__"] = module
    exec(code, module.__dict__)


def _where(exc: BaseException) -> str:
    from pitstop.train.script.frames import is_user_file

    site = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if is_user_file(frame.filename):
            site = f" at {os.path.basename(frame.filename)}:{frame.lineno}"
    return site


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _exit(code: int) -> None:
    """Leave now (the script's own atexit and finalizers are not pitstop's to run), after ending and
    reaping the script's worker processes (a DataLoader's): orphaned, init would reap them and their
    CPU time would leave the run's process tree, which the load monitor would count as another
    process's."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        import multiprocessing

        children = multiprocessing.active_children()
        for child in children:
            child.terminate()
        for child in children:
            child.join(timeout=2)
    except Exception:
        pass
    os._exit(code)


def main(argv: list[str]) -> None:
    """Entry point: ready, the setup request, then the script. ``FD``: the connection pitstop passed;
    ``--connect ADDRESS``: a rank of a torchrun job connects to pitstop's listener and says its rank."""
    if argv[1] == "--connect":
        from multiprocessing.connection import Client

        conn = Client(argv[2], family="AF_UNIX")
        conn.send(("rank", int(os.environ.get("RANK", "0"))))
    else:
        conn = Connection(int(argv[1]))
    conn.send(("ready", time.monotonic()))
    try:
        method, job = conn.recv()
    except (EOFError, OSError):
        _exit(0)
    if method != "setup":
        _exit(0)
    Server(conn, job).run()


if __name__ == "__main__":
    main(sys.argv)
