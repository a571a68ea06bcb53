"""The load discipline every staged search shares (``engine/stages.StagedSearch``): a thread or
worker count measured on a busy machine is never chosen, the load is recorded over each stage, and
a stage whose comparison moved while it ran is said to have drifted."""

from __future__ import annotations

import random
import time

from pitstop.engine.measurement import Measurement
from pitstop.engine.result import Rows
from pitstop.engine.stages import Outcome, Stage, StagedSearch


class _Search(StagedSearch):
    def __init__(self) -> None:
        self.outcome, self.env, self.t0, self.limit_s = Outcome(), {}, time.monotonic(), 10.0


def _stage(rows: list[Measurement], load: dict | None = None) -> Stage:
    return Stage("final", Rows(model="m", inputs={}, settings={}, environment={}, baseline="base", rows=rows),
                 load=load or {})


def _row(name: str, samples: list[list[float]]) -> Measurement:
    return Measurement(name, {}, 8, "ok", replica_samples_s=samples)


def test_a_count_measured_on_a_busy_machine_is_not_chosen() -> None:
    search, row = _Search(), _row("threads1", [[0.01] * 10])
    quiet = _stage([row], {"busy": False, "others_cpu_share": 0.02, "loadavg_end": 0.3})
    assert search.busy_choice(quiet, row, "thread counts") is None
    busy = _stage([row], {"busy": True, "others_cpu_share": 0.61, "loadavg_end": 2.4})
    note = search.busy_choice(busy, row, "thread counts")
    assert note is not None and "61%" in note and "load average 2.4" in note and "thread counts" in note
    search.env["load_at_start"] = {"busy": True, "others_cpu_share": 0.4}  # busy before the search: also refused
    assert search.busy_choice(quiet, row, "thread counts") is not None


def test_the_load_of_a_stage_is_recorded_even_when_it_stops_early() -> None:
    search = _Search()
    stage = _stage([])
    search.outcome.stages.append(stage)
    try:
        with search.watched(stage):
            time.sleep(0.05)
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert stage.load["wall_s"] >= 0.05 and "busy" in stage.load
    assert search.env["load"]  # the merged record the JSON's environment carries


def test_a_comparison_that_moved_within_the_stage_drifted() -> None:
    rng = random.Random(0)
    base = [[0.010 + rng.gauss(0, 1e-4) for _ in range(30)]]
    steady = [[0.005 + rng.gauss(0, 5e-5) for _ in range(30)]]
    moved = [[(0.005 if i < 15 else 0.009) + rng.gauss(0, 5e-5) for i in range(30)]]  # slowed mid-stage
    search = _Search()
    assert search.drifted(_stage([_row("base", base), _row("fast", steady)]), "base", 8) is None
    reason = search.drifted(_stage([_row("base", base), _row("fast", moved)]), "base", 8)
    assert reason is not None and reason.startswith("fast's speed-up")
    assert search.drifted(_stage([_row("fast", moved)]), "base", 8) is None  # no baseline row: nothing to say
