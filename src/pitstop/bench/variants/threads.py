"""The thread-count axis: ``threadsN`` runs with N intra-op threads (at most the physical cores);
the recipe's ``torch.set_num_threads`` line is written for every variant."""

from __future__ import annotations

from pitstop.bench.variants.base import Axes, Target, Technique


class Threads(Technique):
    """A thread count of the variant's own (the recipe sets it for every variant)."""

    axis = "threads"

    def gate(self, config: Axes, target: Target) -> str | None:
        if config.threads is not None and not 1 <= config.threads <= max(target.physical_cores, 1):
            return f"{config.threads} threads on {target.physical_cores} physical cores"
        return None
