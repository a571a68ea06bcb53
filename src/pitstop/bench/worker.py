"""The variant session: everything that runs a variant, inside its own worker process.

``python -m pitstop.bench.worker FD`` serves a ``VariantSession`` over a socket; the launcher
(``launch.py``) talks to it with plain messages ``(method, kwargs)`` -> ``("ok", value)`` or
``("error", one_line, traceback_text)``. The same session also runs inline, in-process."""

from __future__ import annotations

import copy
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from pitstop.bench.fidelity import FIDELITY_FILE, compare, concat, detached, is_logits, load_metric, score
from pitstop.bench.variants.config import REFERENCE, VariantConfig, prepare
from pitstop.bench.variants.handlers import Target, apply
from pitstop.engine.peak import activation_bytes, peak_bytes
from pitstop.engine.timer import CallTimer, TimingPolicy
from pitstop.engine.worker import CudaEventTimer, faults, load_module, serve, sync
from pitstop.models.inputs import Inputs


class VariantSession:
    """One variant of one model at one batch size: set up, then measured on request."""

    def setup(self, payload_path: str, config: dict[str, Any], threads: int, device: str,
              policy: dict[str, Any], module: torch.nn.Module | None = None,
              target: dict[str, Any] | None = None, workdir: str | None = None) -> dict[str, Any]:
        """Load model and inputs and compute the fp32 eval reference (``prepare`` applies the variant).

        The reference runs with the payload's ``reference_threads`` (the run's count), not the
        variant's own: a difference the threads axis causes must show in the fidelity gate.
        ``module`` (inline runs only) is used instead of rebuilding one from the payload;
        ``fidelity.pt`` beside the payload holds more batches like the timing one, for fidelity on
        more samples (the group writes it)."""
        payload = torch.load(payload_path, weights_only=True)
        torch.set_num_threads(payload.get("reference_threads") or threads)
        self.device = torch.device(device)
        if module is None:
            module = load_module(payload["source"], payload.get("state_dict"), payload["batch_size"])
        self.module = module.to(self.device)
        self.inputs = Inputs(tuple(payload["args"]), dict(payload["kwargs"])).map(lambda t: t.to(self.device))
        output = prepare(REFERENCE, self.module, self.inputs)()
        self.logits = is_logits(output)
        self.reference = detached(output)
        self.more: list[Inputs] = []  # further fidelity batches, after the timing batch
        fidelity_path = Path(payload_path).with_name(FIDELITY_FILE)
        if fidelity_path.exists():
            self.more = [Inputs(tuple(a), dict(k)).map(lambda t: t.to(self.device))
                         for a, k in torch.load(fidelity_path, weights_only=True)]
            self.reference = concat([self.reference, *(detached(prepare(REFERENCE, self.module, b)())
                                                       for b in self.more)])
        torch.set_num_threads(threads)
        self.config = VariantConfig.from_dict(config)
        self.threads = threads
        self.target = Target.from_dict(target) if target else Target(device=self.device.type)
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="pitstop-variant-"))
        self.policy = TimingPolicy(**policy)
        self.clock = time.process_time if self.policy.clock == "cpu" else time.perf_counter  # cpu: a busy machine
        return {"threads": torch.get_num_threads()}

    def prepare(self) -> dict[str, Any]:
        """Apply the variant (its recipe) and make the first call; both timed together, since
        compilation and export happen there. Plain grad-mode variants run the module itself."""
        start = time.perf_counter()
        module = self.module if self.config.plain else copy.deepcopy(self.module)
        fast, details = apply(self.config, self.target, self.threads, module, self.inputs, self.workdir)
        self.fast = fast
        args, kwargs = self.inputs.args, self.inputs.kwargs
        self.fn = lambda: fast(*args, **kwargs)
        del module
        self.first_output: Any = detached(self.fn())  # compared by fidelity(): no extra call
        sync(self.device)
        cuda = self.device.type == "cuda"
        self.timer = CudaEventTimer(self.fn, sync=torch.cuda.synchronize) if cuda else CallTimer(self.fn, self.clock)
        return {"first_call_s": time.perf_counter() - start, "details": details}

    def memory(self) -> dict[str, Any]:
        """Peak memory of one call and the activation bytes it keeps for backward."""
        peak, method = peak_bytes(self.fn, self.device)
        exclude = [*self.module.parameters(), *self.module.buffers(), *self.inputs.tensors()]
        return {"peak_memory_bytes": peak, "peak_memory_method": method,
                "activation_bytes": activation_bytes(self.fn, exclude)}

    def fidelity(self) -> dict[str, Any]:
        """The variant's first outputs (after ``prepare``) and its outputs on the further fidelity
        batches compared with the reference."""
        output, self.first_output = self.first_output or detached(self.fn()), None
        outputs = [output, *(detached(self.fast(*b.args, **b.kwargs)) for b in self.more)]
        return compare(concat(outputs), self.reference, self.logits)

    def metric(self, spec: str) -> dict[str, Any]:
        """The user's metric of the variant (its ``fn(model)`` on the user's own data)."""
        return {"metric": score(load_metric(spec), self.fast)}

    def fidelity64(self) -> dict[str, Any]:
        """Both the variant and the fp32 eager reference compared with an fp64 eager run: a
        compiled or exported graph may be closer to the truth than eager fp32 is."""
        module = copy.deepcopy(self.module).double()
        inputs = self.inputs.map(lambda t: t.double() if t.is_floating_point() else t)
        truth = detached(prepare(REFERENCE, module, inputs)())
        return {"rel_err_fp64": compare(detached(self.fn()), truth, False)["rel_err"],
                "eager_rel_err_fp64": compare(self.reference, truth, False)["rel_err"]}

    def warmup(self) -> dict[str, Any]:
        """Warm up until timings settle."""
        return vars(self.timer.warmup(self.policy))

    def run(self, n: int) -> dict[str, Any]:
        """Seconds for each of ``n`` timed calls, and the page faults the process took meanwhile."""
        before = faults()
        times = self.timer.times(n)
        return {"times": times, "page_faults": faults() - before}


    def bare_timer(self, seconds: float) -> list[float]:
        """Cross-check: ``torch.utils.benchmark.Timer`` over the same callable in this process
        (per-call means of its blocks). benchmarks/harness_overhead.py compares it with ``run``."""
        import torch.utils.benchmark as tb

        timer = tb.Timer(stmt="fn()", globals={"fn": self.fn}, num_threads=torch.get_num_threads())
        return list(timer.blocked_autorange(min_run_time=seconds).times)


def main(argv: list[str]) -> None:
    """Entry point of a worker process: ``python -m pitstop.bench.worker FD``."""
    from multiprocessing.connection import Connection

    from pitstop._exit import collect_and_freeze

    serve(Connection(int(argv[1])), VariantSession())
    collect_and_freeze()


if __name__ == "__main__":
    main(sys.argv)
