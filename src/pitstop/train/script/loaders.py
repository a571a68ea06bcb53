"""The training DataLoader, seen from inside the script's process (``Probe``): the seconds each
step waits in a loader iterator's ``__next__`` (the input wait), which loader handed over the batch
and how many batches its workers make ahead, and (the discovery run) where each DataLoader is built,
what it was given, whether fetching a batch draws from the global random generators, and why its
batches could not come from worker processes. ``loader_configs`` plans the search's loader variants."""

from __future__ import annotations

import os
import time
from typing import Any

import torch

from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.script.rng import rng_states

LOADER_ARGS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers")  # the 6th: num_workers
WORTH_WAIT = 0.05  # a step waiting less than 5% of its time for input gains less than 1.05x from any loader
FIRST_WAIT = 1 / 3  # a step waiting at least a third of its time for input (1.5x to gain): the loader probed first


def watch(probe: Any) -> None:
    """The input wait of each step (time in a DataLoader iterator's ``__next__``, in this process),
    which loader handed over the batch, and (the discovery run) where each DataLoader is built,
    what it was given and whether its batches could come from worker processes (``loaders``)."""
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    next_, iter_, init = _BaseDataLoaderIter.__next__, DataLoader.__iter__, DataLoader.__init__
    probe._orig["loader_next"], probe._orig["loader_iter"] = next_, iter_

    def __next__(iterator: Any) -> Any:
        if os.getpid() != probe.pid:
            return next_(iterator)
        t0 = time.perf_counter()
        states = rng_states() if probe.discover and probe._rng_checks < 4 else None
        try:
            return next_(iterator)
        finally:
            probe.data_s += time.perf_counter() - t0
            probe._last_loader = getattr(iterator, "_pitstop_loader", None)
            probe.loader_queue = (getattr(iterator, "_num_workers", 0) or 0) * (
                getattr(iterator, "_prefetch_factor", 0) or 0)
            if states is not None:
                _rng_drawn(probe, iterator, states)

    def __iter__(loader: Any) -> Any:
        if probe.fill_cache and os.getpid() == probe.pid:  # a cache variant: its items made before the workers start
            from pitstop.train.script.item_cache import fill

            fill(loader, probe)
        iterator: Any = iter_(loader)
        try:
            iterator._pitstop_loader = id(loader)
            iterator._pitstop_fetches = 0
        except AttributeError:
            pass
        return iterator

    # safe: calls the original with the same arguments and returns what it returns;
    # never undone: it lives in the script's own child process, which ends with the run
    _BaseDataLoaderIter.__next__ = __next__  # type: ignore[method-assign,assignment]
    DataLoader.__iter__ = __iter__  # type: ignore[method-assign]
    if not probe.discover:
        return
    probe._orig["loader_init"] = init
    probe.sites["loaders"] = []

    def __init__(loader: Any, *args: Any, **kwargs: Any) -> None:
        init(loader, *args, **kwargs)
        if os.getpid() == probe.pid:
            probe.sites["loaders"].append(loader_site(loader, args, kwargs))
            probe.loader_objects.append(loader)  # the training one's items are checked for a cache (item_cache)

    # safe: calls the original with the same arguments and returns what it returns;
    # never undone: it lives in the script's own child process, which ends with the run
    DataLoader.__init__ = __init__  # type: ignore[method-assign,assignment]
    if torch.cuda.is_available():
        _watch_batch_copies(probe)


def _watch_batch_copies(probe: Any) -> None:
    """Where the script copies a batch to the GPU (``x.to(device)``, ``x.cuda()`` on a CPU tensor,
    in its own files, before the first training forward): with a pinned loader those copies can be
    ``non_blocking=True`` (the edit of a loader variant on CUDA)."""
    from pitstop.train.script.frames import caller_site

    to, cuda, sites = torch.Tensor.to, torch.Tensor.cuda, probe.sites.setdefault("batch_copies", [])

    def record(tensor: torch.Tensor, moved: torch.Tensor) -> None:
        if not probe.started and os.getpid() == probe.pid and tensor.device.type == "cpu" \
                and moved.device.type == "cuda":
            site = caller_site()
            if site is not None and site not in sites:
                sites.append(site)

    def to_(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        moved = to(tensor, *args, **kwargs)
        record(tensor, moved)
        return moved

    def cuda_(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        moved = cuda(tensor, *args, **kwargs)
        record(tensor, moved)
        return moved

    # safe: calls the original with the same arguments and returns what it returns;
    # never undone: it lives in the script's own child process, which ends with the run
    torch.Tensor.to, torch.Tensor.cuda = to_, cuda_  # type: ignore[method-assign,assignment]


def _rng_drawn(probe: Any, iterator: Any, before: tuple[Any, ...]) -> None:
    """Whether fetching a batch in this process drew from the global random generators (an
    augmentation in ``__getitem__``): with workers, those draws move to the workers' own seeds.
    The first fetch of an iterator is not judged (a shuffling sampler draws its seed there)."""
    iterator._pitstop_fetches = getattr(iterator, "_pitstop_fetches", 0) + 1
    if iterator._pitstop_fetches < 2 or getattr(iterator, "_num_workers", 0):
        return
    probe._rng_checks += 1
    loader = next((x for x in probe.sites.get("loaders", []) if x["id"] == getattr(iterator, "_pitstop_loader",
                                                                                   None)), None)
    if loader is not None and rng_states() != before:
        loader["draws_random"] = True


def check_cache(probe: Any) -> None:
    """The training loader's items, checked for a cache (``item_cache.check``) when the search tries
    it: its site's ``cache``."""
    from pitstop.train.script.item_cache import check

    index = probe.sites.get("train_loader")
    if not getattr(probe, "cache_check", False) or index is None or index >= len(probe.loader_objects):
        return  # the search does not try the cache (--techniques without it): no item is made twice
    loader = probe.loader_objects[index]
    probe.sites["loaders"][index]["cache"] = check(loader, probe.loader_objects)


def loader_site(loader: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A DataLoader as data: where it is built (None: by a library on the script's behalf), its
    options, its length, and why its batches cannot come from worker processes (None: they can)."""
    from pitstop.train.script.frames import caller_site

    try:
        batches = len(loader)
    except TypeError:
        batches = None
    context = loader.multiprocessing_context
    start = context.get_start_method() if context is not None else _default_start_method()
    return {"id": id(loader), "site": caller_site(), "keywords": sorted(kwargs), "positional": len(args),
            "num_workers": loader.num_workers, "persistent_workers": bool(loader.persistent_workers),
            "pin_memory": bool(loader.pin_memory), "prefetch_factor": loader.prefetch_factor,
            "batch_size": loader.batch_size, "batches": batches, "dataset": type(loader.dataset).__name__,
            "start_method": start, "draws_random": False, "cannot_use_workers": not_to_workers(loader, start)}


def _default_start_method() -> str:
    import multiprocessing

    return multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_context().get_start_method()


def not_to_workers(loader: Any, start: str) -> str | None:
    """Why this loader's batches cannot come from worker processes, or None."""
    import io
    import pickle

    from torch.utils.data import IterableDataset

    dataset = loader.dataset
    if isinstance(dataset, IterableDataset):
        return (f"its dataset ({type(dataset).__name__}) is an IterableDataset: each worker would yield the whole "
                "stream unless it splits the work by get_worker_info()")
    handles = [name for name, value in vars(dataset).items() if isinstance(value, io.IOBase) and not value.closed] \
        if hasattr(dataset, "__dict__") else []
    if handles:
        return (f"its dataset holds an open file ({type(dataset).__name__}.{handles[0]}): worker processes would "
                "share one file position")
    if start != "fork":  # spawn / forkserver: the dataset, the collate and the init function are pickled
        for what, value in (("dataset", dataset), ("collate_fn", loader.collate_fn),
                            ("worker_init_fn", loader.worker_init_fn)):
            try:
                pickle.dumps(value)
            except Exception as exc:
                return f"its {what} cannot be sent to a {start}ed worker ({type(exc).__name__}: {exc})"
    return None


def companions(found: dict[str, Any]) -> list[dict[str, Any]]:
    """The script's other DataLoaders over the training loader's Dataset class, each built at its own
    line of the user's files (an evaluation's ``dev_loader``): the same ``__getitem__`` work, so the
    training loader's measured wait speaks for them, and the whole run (not the step the search
    times) waits for them too; the training loop's own site and a loader that cannot use workers, or
    is given ``num_workers`` by position, are left out."""
    sites = found.get("sites") or {}
    index = sites.get("train_loader")
    if index is None:
        return []
    loaders = sites.get("loaders") or []
    train = loaders[index]
    seen = {_where(train)}
    out = []
    for loader in loaders:
        where = _where(loader)
        if (where in seen or loader.get("site") is None or loader["dataset"] != train["dataset"]
                or loader.get("cannot_use_workers") or loader.get("positional", 0) >= len(LOADER_ARGS)):
            continue
        seen.add(where)
        out.append(loader)
    return out


def _where(loader: dict[str, Any]) -> tuple[str, int] | None:
    site = loader.get("site")
    return (site["file"], site["line"]) if site else None


def input_share(found: dict[str, Any]) -> float | None:
    """The largest share of a training step that the discovery run waited for its DataLoader, over
    its training steps after the first (the first also starts the iterator and its workers; an
    evaluation's interval is no training step); None when no step was timed."""
    times, data = found.get("times") or [], found.get("data_times") or []
    evals = found.get("eval_steps") or [False] * len(times)
    rows = [(t, d) for t, d, e in zip(times, data, evals, strict=False) if not e and t > 0]
    rows = rows[1:] or rows
    return max(min(d / t, 1.0) for t, d in rows) if rows else None


def loader_configs(found: dict[str, Any], settings: Any, one_thread: bool,
                   notes: list[str]) -> tuple[list[TrainConfig], bool]:
    """A script's training DataLoader with worker processes: 1, 2, 4, ... up to the physical cores
    and at least 4 (a worker waiting on a read or a decode needs no core of its own: on 2 cores,
    a loader sleeping 1.5 ms a sample ran its whole script 1.77x faster with 2 workers, 2.46x with
    4), each also with torch's threads cut to the cores the workers leave (threads x workers: they
    compete for the same cores); and whether they are probed first. A step that waits w of its time
    for its input cannot gain more than 1/(1-w) from any loader: a wait of at least ``FIRST_WAIT``
    is probed first (the input first, as the training stack goes, and a tight budget never skips
    it); a smaller one after the compute techniques (six loader variants probed first on loops that
    waited little took the 120 s budget that imagenet's bf16 needed: 1.60x in the probe, no final);
    one below ``WORTH_WAIT`` not at all unless the search is the loader's alone. None when the
    script's loop reads no DataLoader. With ``cache`` among the techniques, the item cache too where
    ``item_cache.offered`` says (the Dataset's items checked fixed, and made twice in a run longer
    than an epoch); ``workers`` left out leaves out the worker counts. ``notes`` says why none were
    tried."""
    index = (found.get("sites") or {}).get("train_loader")
    if index is None:
        if found:
            notes.append("loader workers: not tried: the training loop reads no torch DataLoader (its batches come "
                         "from elsewhere)")
        return [], False
    share = input_share(found)
    if share is not None and share < WORTH_WAIT and not set(settings.techniques) <= {"workers", "cache", "threads"}:
        notes.append(f"loader workers: not tried: the training steps of the discovery run waited at most {share:.0%} "
                     f"of their time for the DataLoader (removing all of it: at most {1 / (1 - share):.2f}x); "
                     "`--techniques workers` measures them anyway")
        return [], False
    from pitstop._env import physical_cores

    loader = found["sites"]["loaders"][index]
    cores = max(physical_cores(), 1)
    configs = []
    counts = (1, 2, 4, 8, 16, 32) if "workers" in settings.techniques else ()
    for n in (k for k in counts if k <= max(cores, 4)):
        if n == loader["num_workers"] and loader["persistent_workers"]:
            continue  # the script's own loader
        configs.append(NAIVE.with_(workers=n))
        left = max(1, cores - n)
        if "threads" in settings.techniques and not one_thread and left != settings.threads:
            configs.append(NAIVE.with_(workers=n, threads=left))
    if "cache" in settings.techniques:
        from pitstop.train.script.item_cache import offered

        configs += [NAIVE.with_(cache=True)] if offered(found, loader, notes, settings.steps) else []
    return configs, share is None or share >= FIRST_WAIT
