"""Script variants measured side by side: ``TrainGroup``'s rounds, profile and gate, with workers
that run the user's script (``child``) and variants that are edits of it (``edits``). ``prepare``
is the discovery run: the unmodified script, seed 0, for a few steps: where its training step
lives, its step-1 gradients (the reference), the FLOPs of one step and this machine's matmul peak."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitstop.engine.launch import ProcessWorker, WorkerFailed
from pitstop.engine.measurement import Measurement
from pitstop.engine.timer import TimingPolicy
from pitstop.errors import ModelRunError, ReferenceFailed, UsageError
from pitstop.train import fidelity
from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.group import OnEvent, TrainGroup, _Live
from pitstop.train.problem import LossSpec, ProblemRequest
from pitstop.train.script import edits
from pitstop.train.script.loaders import companions
from pitstop.train.settings import TrainSettings
from pitstop.train.variants import TrainTarget, gate

DISCOVERY_STEPS = 3  # step 1 (the reference gradients), step 2 (its FLOPs), step 3
SCRIPT_GRAD_FLOOR = 0.5  # a step-1 gradient cosine under 0.5 is rejected (bf16 or a layout moves it a little)
FLOOR_IS = "script mode's fixed floor: another seed of a script draws other weights, so no seed-to-seed cosine is taken"


@dataclass
class ScriptSource:
    """The user's script and its own arguments."""

    script: str
    args: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return " ".join([self.script, *self.args])


class ScriptWorker(ProcessWorker):
    """A ``python -m pitstop.train.script.child`` process: the script, the user's own thread
    settings (nothing pinned), its output in the log."""

    MODULE = "pitstop.train.script.child"


class ScriptGroup(TrainGroup):
    """Measures groups of script variants (``TrainGroup``'s machinery, script workers)."""

    def __init__(self, source: ScriptSource, settings: TrainSettings, on_event: OnEvent | None = None) -> None:
        super().__init__(source, settings, ProblemRequest(), on_event)  # type: ignore[arg-type]
        self.script = source
        self.found: dict[str, Any] = {}
        self.reference = self.workdir / "reference.pt"

    # -- discovery ------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Run the unmodified script (seed 0) for a few steps and learn where its training step is."""
        s = self.settings
        self.on_event("phase", {"text": f"{self.script.name}: finding the training step (a few steps of the script)"})
        worker = self._worker(NAIVE, self.workdir / "discover.log")
        try:
            worker.send("setup", **self._script_job(NAIVE, seed=0, discover=True))
            worker.receive(s.timeout_s)
            for method, kwargs in (("prepare", {}), ("trajectory", {"steps": DISCOVERY_STEPS}), ("discover", {})):
                worker.send(method, **kwargs)
                reply = worker.receive(s.timeout_s)
            found = reply
            worker.send("peaks")
            found["peaks"] = worker.receive(s.timeout_s)
        except WorkerFailed as exc:
            reason = re.sub(r"^\w+ raised ", "", str(exc))  # the request's name is pitstop's, not the user's
            raise ModelRunError(f"{self.script.name}: {reason} (the script's output: {self.workdir / 'discover.log'})"
                                ) from None
        finally:
            worker.close()
        self._adopt_script(found)

    def _adopt_script(self, found: dict[str, Any]) -> None:
        losses = [x for x in found.get("losses", []) if x == x]
        if not found.get("steps"):
            raise UsageError(f"{self.script.name}: no optimizer step was seen; pitstop train SCRIPT measures a script "
                             "that trains with a torch.optim optimizer")
        if not losses:
            raise UsageError(f"{self.script.name}: no loss was seen (backward() on a scalar); pitstop needs the "
                             "loss to check that a variant trains the same")
        if any(not _finite(x) for x in losses):
            raise ReferenceFailed(f"{self.script.name}: the unmodified script's loss is not finite in its first "
                                  f"steps ({losses}): there is no training to compare with")
        self.found = {**found, "script": os.path.realpath(self.script.script)}
        self.first_losses = losses
        forward = (found.get("sites") or {}).get("forward") or {}
        flags = [set(o["flags"]) for o in (found.get("sites") or {}).get("optimizers", [])]
        self.target = TrainTarget(device=str(forward.get("device", "cpu")).split(":")[0],
                                  native_bf16=bool(found["peaks"].get("native_bf16")),
                                  compiler=bool(found["peaks"].get("compiler")),
                                  physical_cores=int(found["peaks"].get("physical_cores", 1)),
                                  has_4d_input=4 in forward.get("input_dims", []), batch_size=1,
                                  ddp=self._wraps(found, "ddp"), fsdp=self._wraps(found, "fsdp"),
                                  allow_emulated=self.settings.allow_emulated,
                                  optimizer_flags=tuple(sorted(set.intersection(*flags))) if flags else ("fused",))
        # what the report says was trained: the script's own optimizer class, whatever it is (LBFGS, a
        # package's or the script's own class: no flag of it is reproduced, only edited where it has one)
        self.problem_doc = {"optimizer": {"name": (found.get("optimizers") or ["?"])[0], "options": {}, "groups": [],
                                          "all": list(found.get("optimizers") or [])},
                            "loss": LossSpec("what the script calls backward() on", kind="own").to_dict()}
        self.seed_cosine = None  # not measured: see FLOOR_IS
        self.inputs_description = self.script.name
        self.info = {"kind": edits.kind_of(found), "inputs": self.script.name}
        self.inline, self.module = False, None
        self.root = edits.root_of(self.script.script)
        self._prepared = True

    def gradient_rejection(self, v: _Live, gradients: dict[str, Any]) -> str | None:
        """Against the fixed floor; not held to it (recorded, with the reason; the loss trajectory of
        the final stage is its gate): a compiled variant of a model with dropout (its graph draws the
        masks from another random stream), and a loader-workers variant whose dataset draws random
        numbers while it makes a batch (its step-1 batch is another draw: a dataset of random
        samples gave a cosine of 0.02 with every worker count)."""
        why = fidelity.gradient_verdict(gradients, None, SCRIPT_GRAD_FLOOR, FLOOR_IS)
        sites = self.found.get("sites") or {}
        dropout, index = sites.get("dropout"), sites.get("train_loader")
        draws = index is not None and bool(sites["loaders"][index].get("draws_random"))
        because = (f"the model has dropout ({dropout}) and a compiled graph draws its masks from another random "
                   "stream" if v.config.compile and dropout else
                   "its dataset draws random numbers while it makes a batch, and in worker processes it draws "
                   "them from the workers' seeds: step 1 trains on another batch" if v.config.workers and draws
                   else None)
        if why and because and "point elsewhere" in why:
            v.row.fidelity = v.row.fidelity if v.row.fidelity is not None else {}
            v.row.fidelity["gradients_not_gated"] = (f"{why.split(' (')[0]}: not gated, {because}; the loss "
                                                     "trajectory decides")
            return None
        return why

    def notes_after(self, rows: list[Measurement]) -> list[str]:
        """What the final stage's rows say: reproducibility (``_reproducible``), and the random draws
        a loader with workers moves (``_loader_notes``)."""
        return self._reproducible(rows) + self._loader_notes(rows) + super().notes_after(rows)

    def _loader_notes(self, rows: list[Measurement]) -> list[str]:
        sites = self.found.get("sites") or {}
        index = sites.get("train_loader")
        if index is None or not any(TrainConfig.from_dict(r.config).workers for r in rows if r.config):
            return []
        loader, notes = sites["loaders"][index], []
        others = companions(self.found)
        if others:
            where = ", ".join(f"{os.path.relpath(x['site']['file'], self.root)}:{x['site']['line']}" for x in others)
            notes.append(f"a workers variant also gives its workers to the script's other DataLoader(s) over "
                         f"{loader['dataset']} ({where}; an evaluation's): the same per-sample work as the training "
                         "loader's, which the search measured; the step times above leave their share out, the whole "
                         "run has it")
        if loader.get("draws_random"):
            notes.append(f"the training DataLoader's dataset ({loader['dataset']}) draws from the global random "
                         "generators while it makes a batch (an augmentation): with worker processes those draws come "
                         "from each worker's own seed, so the batches differ from the unmodified script's as another "
                         "seed's would; the trajectory gate judges the workers variants against the spread of the "
                         "fp32 seeds")
        return notes

    def _reproducible(self, rows: list[Measurement]) -> list[str]:
        """Whether the script is reproducible under pitstop's seeds: the unmodified script's first
        losses with seed 0, in the discovery run and in the reference's seed-0 run of this stage
        (its trajectory, else its first step). Up to five losses are compared, so two runs that
        differ cannot pass by one coincidence. A script that seeds its own randomness from elsewhere
        (DataLoader workers seeded by the OS, a clock) differs: the gate still compares against
        the spread of the fp32 seeds, which covers that randomness, but cannot see a technique's
        effect smaller than it."""
        naive = next((r for r in rows if r.variant == NAIVE.name and r.status != "failed"), None)
        if naive is None:
            return []
        trajectory = (naive.fidelity or {}).get("trajectory") or {}
        runs = zip(trajectory.get("seeds", []), trajectory.get("losses", []), strict=True)
        again = next((run for seed, run in runs if seed == 0 and run), None)
        if again is None and (naive.details or {}).get("first_step_loss") is not None:
            again = [naive.details["first_step_loss"]]
        n = min(len(again or []), len(self.first_losses), 5)
        pairs = list(zip(self.first_losses[:n], (again or [])[:n], strict=True))
        if not pairs or all(abs(b - a) <= 1e-3 * max(1.0, abs(a)) for a, b in pairs):
            return []
        began = ", ".join(f"{a:.5g}" for a, _ in pairs), ", ".join(f"{b:.5g}" for _, b in pairs)
        return [f"{self.script.name} is not reproducible under pitstop's seeds: two runs of the unmodified script "
                f"with seed 0 began at losses {began[0]} and {began[1]} (its data order or initialisation "
                "comes from elsewhere, e.g. DataLoader workers seeded by the OS); the gate compares each variant with "
                "the spread of the fp32 seeds, which includes that randomness, and cannot see smaller effects"]

    def _wraps(self, found: dict[str, Any], wrapper: str) -> bool:
        """Whether the script, run under torchrun, builds its DDP (``ddp``) or FSDP2 (``fsdp``) in its own code."""
        sites = (found.get("sites") or {}).get(wrapper, [])
        return self.settings.nproc_per_node > 1 and any(d.get("site") for d in sites)

    # -- variants -------------------------------------------------------------------------------

    def changes(self, config: TrainConfig) -> list[edits.Change]:
        """The edits that make the script run ``config`` (raises ``NotMechanical``)."""
        return edits.plan(config, self.found, self.target.device)

    def sources(self, config: TrainConfig) -> dict[str, str]:
        return edits.apply(self.changes(config))

    def recipe(self, config: TrainConfig, header: str = "") -> str:
        """The variant as a unified diff of the user's files ('' for the unmodified script)."""
        return edits.diff(self.sources(config), self.root) if config != NAIVE else ""

    def runnable(self, config: TrainConfig) -> bool:
        return self._gate(config) is None

    def _gate(self, config: TrainConfig) -> str | None:
        reason = gate(config, self.target)
        if reason:
            return reason
        try:
            self.sources(config)
        except edits.NotMechanical as exc:
            return f"not edited: {exc}"
        except SyntaxError as exc:
            return f"not edited: a file does not parse ({exc.msg}, line {exc.lineno})"
        return None

    def _worker(self, config: TrainConfig, log: Path) -> Any:
        env = self._env(config)
        if self.one_thread:  # a busy machine: one thread, compared by CPU time (TrainGroup.measured)
            env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        if self.settings.nproc_per_node > 1:
            from pitstop.train.launch import ScriptRanks

            return ScriptRanks(log, self.settings.nproc_per_node, env)
        return ScriptWorker(log, None, env)

    def _setup_request(self, v: _Live, k: int, i: int, workdir: Path, policy: TimingPolicy) -> dict[str, Any]:
        return self._script_job(v.config, seed=v.seeds[i])

    def _script_job(self, config: TrainConfig, seed: int, discover: bool = False) -> dict[str, Any]:
        return {"script": self.script.script, "args": list(self.script.args),
                "sources": self.sources(config) if config != NAIVE else {}, "seed": int(seed),
                "reference": str(self.reference), "discover": discover, "threads": 1 if self.one_thread else None,
                "fill_cache": config.cache, "check_cache": discover and "cache" in self.settings.techniques}


def _finite(x: float) -> bool:
    return x == x and abs(x) != float("inf")
