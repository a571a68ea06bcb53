"""Under torchrun: every rank's small summary on rank 0, over the job's own process group while it
exists (``gather_object``: works across nodes, no port or launcher of ours), else through files in
a shared directory (``merge_dir``; a job whose script never made a process group, or destroyed it).

The doctor gathers its findings this way, the profile its per-rank phases."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def world() -> int:
    """The job's number of ranks (1 outside torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    """This process's rank (0 outside torchrun)."""
    return int(os.environ.get("RANK", "0"))


def merge_dir(tag: str = "doctor") -> Path:
    """Where the ranks of one job leave their summaries (``PITSTOP_DOCTOR_DIR`` overrides)."""
    explicit = os.environ.get("PITSTOP_DOCTOR_DIR")
    if explicit:
        return Path(explicit) if tag == "doctor" else Path(explicit) / tag
    job = os.environ.get("TORCHELASTIC_RUN_ID") or os.environ.get("MASTER_PORT", "0")
    return Path(tempfile.gettempdir()) / f"pitstop-{tag}-{os.getuid() if hasattr(os, 'getuid') else 0}-{job}"


def group_alive() -> bool:
    """Whether the default process group exists now."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def gather(doc: dict[str, Any], tag: str = "doctor", timeout_s: float = 60.0) -> list[dict[str, Any] | None] | None:
    """Every rank's ``doc`` on rank 0 (in rank order; None for a rank that left none in time), None
    on the other ranks."""
    if group_alive():
        import torch.distributed as dist

        gathered: list[Any] | None = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
        dist.gather_object(doc, gathered, dst=0)
        return gathered
    return _through_files(doc, tag, rank(), world(), timeout_s)


def _through_files(doc: dict[str, Any], tag: str, me: int, size: int, timeout_s: float
                   ) -> list[dict[str, Any] | None] | None:
    folder = merge_dir(tag)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".rank{me}.json"
    tmp.write_text(json.dumps(doc))
    tmp.replace(folder / f"rank{me}.json")
    if me != 0:
        return None
    deadline = time.monotonic() + timeout_s
    paths = [folder / f"rank{r}.json" for r in range(size)]
    while not all(p.exists() for p in paths) and time.monotonic() < deadline:
        time.sleep(0.1)
    docs: list[dict[str, Any] | None] = []
    for path in paths:
        docs.append(json.loads(path.read_text()) if path.exists() else None)
        path.unlink(missing_ok=True)
    return docs


def before_destroy(callback: Any) -> Any:
    """Wrap ``destroy_process_group`` so that ``callback()`` runs while the group still exists
    (the job's end: the moment to gather); returns a function that puts the original back."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d

    original = distributed_c10d.destroy_process_group
    done = [False]

    def destroy_process_group(group: Any = None) -> None:
        if group is None and dist.is_initialized() and not done[0]:
            done[0] = True
            callback()
        original(group)

    dist.destroy_process_group = distributed_c10d.destroy_process_group = destroy_process_group

    def restore() -> None:
        dist.destroy_process_group = distributed_c10d.destroy_process_group = original

    return restore
