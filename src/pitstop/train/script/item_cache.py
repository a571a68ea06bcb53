"""The item cache at run time: may a script's training Dataset's items be made once and kept
(``Cls.__getitem__ = functools.cache(Cls.__getitem__)`` after its class, ``cache_edit``), and the
fill that lets the search time the epochs where the cache acts.

- ``check(loader)`` (the discovery run, at the first training forward): the Dataset's class is the
  user's own, defined at the top level of one of their files; its ``__getitem__`` keeps no state (it
  stores nothing on ``self``, and no other method but ``__init__`` stores what it reads); it draws
  nothing from the global random generators and gives the same values twice for a few items (the
  generators' states are put back after); the items hold no tensor that requires grad; the loop
  cannot change a cached item in place (the loader batches, and its collate function neither changes
  the items nor hands over their memory); the dataset is hashable and fetches by ``__getitem__``;
  and all its items (those of the script's other DataLoaders over the same class too) fit in a
  quarter of the memory available. The result is the loader's ``cache``: where to edit and what was
  measured, or ``{"cannot": why}``. ``offered`` decides whether the search probes it.
- ``fill(loader, probe)`` (a cache variant's process): at a cached dataset's first ``iter()``, every
  item is made once, timed into the time before the first step (the first epoch's extra work, which
  the search counts as the technique's one-time cost), so that the steps the search times are those
  of the second epoch on, where the cache acts. The fill runs before the loader starts its workers:
  a forked worker starts with the filled cache, as a persistent worker has it from the second epoch
  on.

The cache lives in the process that calls ``__getitem__``: the script's own (no workers) or its one
persistent worker; with more workers each would hold a part of it that the search did not measure,
and workers that restart every epoch start empty, so those variants are not planned (``cache_edit``)."""

from __future__ import annotations

import ast
import functools
import os
import statistics
import sys
import time
from typing import Any

ITEMS_CHECKED = 3  # items made twice each: the first, the middle and the last
MEMORY_SHARE = 0.25  # of the memory available: the most the cached items may take
CHECK_S = 5.0  # the check stops making items after this long (one slow item is still made twice)


def check(loader: Any, loaders: list[Any] | None = None) -> dict[str, Any]:
    """Whether ``loader``'s items may be cached, and where the edit goes; ``loaders``: the script's
    DataLoaders so far (their datasets of the same class count towards the memory)."""
    try:
        return _check(loader, loaders or [loader])
    except Exception as exc:  # the script's own code raised while its items were made twice
        return {"cannot": f"making an item twice raised {type(exc).__name__}: {exc}"[:300]}


def _check(loader: Any, loaders: list[Any]) -> dict[str, Any]:
    from torch.utils.data import IterableDataset

    from pitstop.train.script.frames import is_user_file

    dataset = base(loader.dataset)
    cls = type(dataset)
    if isinstance(dataset, IterableDataset):
        return {"cannot": f"its dataset ({cls.__name__}) is an IterableDataset: items have no index to keep them by"}
    if not callable(getattr(cls, "__len__", None)):
        return {"cannot": f"its dataset ({cls.__name__}) has no length"}
    if callable(getattr(cls, "__getitems__", None)):
        return {"cannot": f"{cls.__name__} makes batches with __getitems__: the loader does not call its __getitem__"}
    if isinstance(cls.__dict__.get("__getitem__"), functools._lru_cache_wrapper):
        return {"cannot": f"{cls.__name__}.__getitem__ is cached already"}
    where = _defined(cls)
    if isinstance(where, str):
        return {"cannot": where}
    if not is_user_file(where["file"]):
        return {"cannot": f"{cls.__name__} is defined in a library ({os.path.basename(where['file'])}), not in your "
                          "files"}
    stateful = _stateful(where["node"], cls.__name__)
    if stateful:
        return {"cannot": stateful}
    try:
        hash(dataset)
    except TypeError:
        return {"cannot": f"{cls.__name__} objects are not hashable (it defines __eq__ without __hash__): the cache "
                          "keeps items by the dataset object"}
    n = len(dataset)
    if n == 0:
        return {"cannot": f"its dataset ({cls.__name__}) is empty"}
    made = _made_twice(dataset, n)
    if isinstance(made, str):
        return {"cannot": made}
    item_bytes, item_s = made
    handed = _handed_over(loader)
    if handed:
        return {"cannot": handed}
    items = sum(len(base(x.dataset)) for x in _same_class(loaders, cls)) or n
    total, available = item_bytes * items, _available_bytes()
    if available is not None and total > MEMORY_SHARE * available:
        return {"cannot": f"its {items:,} items would take about {total / 2**20:,.0f} MiB, more than a quarter of the "
                          f"{available / 2**20:,.0f} MiB available"}
    return {"class": cls.__name__, "file": where["file"], "line": where["line"], "end_line": where["end_line"],
            "items": items, "bytes": int(total), "item_ms": round(item_s * 1e3, 3), "checked": ITEMS_CHECKED}


def base(dataset: Any) -> Any:
    """The dataset under ``torch.utils.data.Subset`` wrappers (``random_split``'s): the one whose
    ``__getitem__`` makes the items."""
    from torch.utils.data import Subset

    while isinstance(dataset, Subset):
        dataset = dataset.dataset
    return dataset


def _same_class(loaders: list[Any], cls: type) -> list[Any]:
    seen, out = set(), []
    for loader in loaders:
        data = base(loader.dataset)
        if type(data) is cls and id(data) not in seen:
            seen.add(id(data))
            out.append(loader)
    return out


def _defined(cls: type) -> dict[str, Any] | str:
    """The class statement: its file, first and last line, and its AST node; or why it cannot be edited."""
    import inspect

    try:
        file = inspect.getsourcefile(cls)
        _, line = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return f"the source of {cls.__name__} cannot be found"
    if not file:
        return f"the source of {cls.__name__} cannot be found"
    file = os.path.realpath(file)
    try:
        with open(file, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        return f"{os.path.basename(file)} cannot be read ({type(exc).__name__})"
    node = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == cls.__name__
                 and (s.decorator_list[0].lineno if s.decorator_list else s.lineno) <= line <= s.lineno + 1), None)
    node = node or next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == cls.__name__), None)
    if node is None:
        return f"{cls.__name__} is not defined at the top level of {os.path.basename(file)} (pitstop edits after it)"
    return {"file": file, "line": node.lineno, "end_line": node.end_lineno or node.lineno, "node": node}


def _stateful(node: ast.ClassDef, name: str) -> str | None:
    """Why the class's items may change between epochs as far as its source shows: ``__getitem__``
    (and the methods it calls on ``self``) store on ``self``, or another method than ``__init__``
    stores what they read (``set_epoch``). None when neither: an inherited ``__getitem__`` is judged
    by the items alone."""
    methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
    if "__getitem__" not in methods:
        return None
    reached, todo = set(), ["__getitem__"]
    while todo:
        m = todo.pop()
        if m in reached or m not in methods:
            continue
        reached.add(m)
        todo += [c.func.attr for c in ast.walk(methods[m]) if isinstance(c, ast.Call)
                 and isinstance(c.func, ast.Attribute) and _on_self(c.func.value)]
    reads = {a.attr for m in reached for a in ast.walk(methods[m]) if isinstance(a, ast.Attribute)
             and _on_self(a.value) and isinstance(a.ctx, ast.Load)}
    for m in sorted(reached):
        stored = _stores(methods[m])
        if stored:
            return f"{name}.{m} stores self.{stored[0]}: its items may depend on what came before"
    for m, f in sorted(methods.items()):
        if m in reached or m == "__init__":
            continue
        changed = [a for a in _stores(f) if a in reads]
        if changed:
            return f"{name}.{m}() changes self.{changed[0]}, which __getitem__ reads: its items may change by epoch"
    return None


def _on_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _stores(f: ast.AST) -> list[str]:
    """The attributes of ``self`` a function assigns, augments, deletes or subscripts into."""
    out = []
    for n in ast.walk(f):
        targets = n.targets if isinstance(n, ast.Assign | ast.Delete) else [n.target] \
            if isinstance(n, ast.AugAssign | ast.AnnAssign) else []
        for t in targets:
            while isinstance(t, ast.Subscript):
                t = t.value
            if isinstance(t, ast.Attribute) and _on_self(t.value):
                out.append(t.attr)
    return out


def _made_twice(dataset: Any, n: int) -> tuple[float, float] | str:
    """(bytes per item, seconds per item) from a few items made twice each, or why they differ. The
    global generators' states are put back whatever happens (the script runs on as it would)."""
    from pitstop.train.script.rng import rng_states, set_rng_states

    saved = rng_states()
    sizes, times, t_end = [], [], time.perf_counter() + CHECK_S
    try:
        for i in dict.fromkeys((0, n // 2, n - 1)):
            before = rng_states()
            t0 = time.perf_counter()
            first = dataset[i]
            times.append(time.perf_counter() - t0)
            if rng_states() != before:
                return (f"{type(dataset).__name__}.__getitem__ draws from the global random generators (an "
                        "augmentation): a cached item would freeze its draw")
            differs = _differs(first, dataset[i])
            if differs:
                return f"{type(dataset).__name__}[{i}] made twice differs ({differs}): its items are not fixed"
            sizes.append(_nbytes(first))
            if time.perf_counter() > t_end:
                break
    finally:
        set_rng_states(saved)
    return statistics.mean(sizes), statistics.median(times)


def _handed_over(loader: Any) -> str | None:
    """Why the loop could change a cached item in place: the loader hands items over as they are
    (``batch_size=None``), its collate function changes the items it is given, or the batch it makes
    shares memory with them (a ``default_collate`` batch is new tensors). Checked on the loader's
    first items, made twice (the generators' states put back)."""
    import torch

    from pitstop.train.script.rng import rng_states, set_rng_states

    if loader.batch_size is None and loader.batch_sampler is None:
        return "the DataLoader hands each item over as it is (batch_size=None): the loop could change a cached item"
    data, saved = loader.dataset, rng_states()
    try:
        picked = list(range(min(len(data), 2)))  # two items make a batch to look at (and each is made twice)
        items, again = [data[i] for i in picked], [data[i] for i in picked]
        batch = loader.collate_fn(items)
    finally:
        set_rng_states(saved)
    changed = next((w for a, b in zip(items, again, strict=True) if (w := _differs(a, b))), None)
    if changed:
        return f"the DataLoader's collate function changes the items it is given ({changed})"
    mine = {t.untyped_storage().data_ptr() for t in _tensors(items) if t.numel()}
    if any(t.numel() and t.untyped_storage().data_ptr() in mine for t in _tensors(batch)
           if isinstance(t, torch.Tensor)):
        return "the batch the collate function makes shares memory with the items: the loop could change a cached item"
    return None


def _tensors(x: Any, depth: int = 0) -> list[Any]:
    import torch

    if isinstance(x, torch.Tensor):
        return [x]
    if depth < 8 and isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v, depth + 1)]
    if depth < 8 and isinstance(x, list | tuple):
        return [t for v in x for t in _tensors(v, depth + 1)]
    return []


def _differs(a: Any, b: Any, depth: int = 0) -> str | None:
    """Why two makings of an item differ, or None when they are the same values."""
    import torch

    np = sys.modules.get("numpy")
    if depth > 8:
        return "nested too deep to compare"
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or a.dtype != b.dtype or a.shape != b.shape:
            return "tensors of another dtype or shape"
        if a.requires_grad:
            return "a tensor that requires grad"
        return None if torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                             and torch.equal(a.nan_to_num(), b.nan_to_num())) else "other values"
    if np is not None and isinstance(a, np.ndarray):
        return None if isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind
                                                                                           in "fc") else "other values"
    if isinstance(a, dict):
        if not isinstance(b, dict) or a.keys() != b.keys():
            return "other keys"
        return next((w for k in a if (w := _differs(a[k], b[k], depth + 1))), None)
    if isinstance(a, list | tuple):
        if type(a) is not type(b) or len(a) != len(b):
            return "another length"
        return next((w for x, y in zip(a, b, strict=True) if (w := _differs(x, y, depth + 1))), None)
    if a is None or isinstance(a, int | float | complex | str | bytes | bool) or (np is not None
                                                                                and isinstance(a, np.generic)):
        return None if type(a) is type(b) and (a == b or (a != a and b != b)) else "other values"
    return f"{type(a).__name__} objects, which pitstop does not compare"


def _nbytes(x: Any, depth: int = 0) -> int:
    """Bytes an item keeps alive (a view of a larger tensor counted at its own size)."""
    import torch

    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size() + 72
    if hasattr(x, "nbytes") and isinstance(getattr(x, "nbytes", None), int):
        return int(x.nbytes) + 112
    if isinstance(x, dict) and depth < 8:
        return sys.getsizeof(x) + sum(_nbytes(k, depth + 1) + _nbytes(v, depth + 1) for k, v in x.items())
    if isinstance(x, list | tuple) and depth < 8:
        return sys.getsizeof(x) + sum(_nbytes(v, depth + 1) for v in x)
    return sys.getsizeof(x)


def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def fill(loader: Any, probe: Any) -> None:
    """A cache variant's process: every item of a cached dataset made once at its first ``iter()``
    (``probe.filled`` keeps the datasets done; ``probe.fill_s`` adds up the seconds)."""
    dataset = loader.dataset
    if id(dataset) in probe.filled or not isinstance(type(base(dataset)).__dict__.get("__getitem__"),
                                                     functools._lru_cache_wrapper):
        return
    probe.filled.add(id(dataset))
    t0 = time.perf_counter()
    for i in range(len(dataset)):
        dataset[i]
    probe.fill_s += time.perf_counter() - t0





def offered(found: dict[str, Any], loader: dict[str, Any], notes: list[str], steps: int | None) -> bool:
    """Whether the search probes the cache (the loader's wait already passed ``WORTH_WAIT``): the
    check passed and the planned run (``steps``: --steps, else the length the discovery run read) is
    longer than an epoch; ``notes`` says why not, or what was checked. The items' time is not held
    against the discovery run's step: a step timed there beside another busy process read 240 ms for
    an 8 ms step, and refused a cache that measured 10x."""
    cache = loader.get("cache") or {"cannot": "its items were not checked"}
    if cache.get("cannot"):
        notes.append(f"item cache: not tried: {cache['cannot']}")
        return False
    steps = steps or (found.get("run_length") or {}).get("steps")
    per_epoch = (loader.get("batches") or 0) / max(1, int(found.get("backwards_per_step") or 1))
    if steps and per_epoch and steps <= per_epoch:
        notes.append(f"item cache: not tried: the planned run ({steps:,} steps) is one epoch of {per_epoch:,.0f} steps "
                     "or less, so no item is made twice")
        return False
    notes.append(f"item cache: {cache['class']}'s items checked on {cache['checked']} (made twice: the same values, no "
                 f"draw from the global random generators; {cache['item_ms']:.2f} ms each), about "
                 f"{cache['bytes'] / 2**20:,.1f} MiB for its {cache['items']:,} items")
    return True
