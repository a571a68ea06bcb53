"""Where the script builds a Lightning ``Trainer`` or HF ``TrainingArguments`` / ``Trainer``: their
``__init__`` is wrapped as their module is imported (an import hook: nothing is imported that the
script does not import itself), recording the call site in the user's files and the keywords given."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from pitstop.train.script.frames import innermost_user_site

WATCHED = {  # module -> (class, kind)
    "lightning.pytorch.trainer.trainer": ("Trainer", "lightning"),
    "pytorch_lightning.trainer.trainer": ("Trainer", "lightning"),
    "transformers.training_args": ("TrainingArguments", "hf-arguments"),
    "transformers.trainer": ("Trainer", "hf-trainer"),
}


class TrainerWatch(importlib.abc.MetaPathFinder):
    """Records ``{"kind", "class", "site", "keywords"}`` for every watched construction."""

    def __init__(self) -> None:
        self.found: list[dict[str, Any]] = []
        self.instances: list[tuple[str, Any]] = []  # (kind, weak reference): where the run length is read

    def install(self) -> None:
        sys.meta_path.insert(0, self)
        for name in WATCHED:  # already imported (a sitecustomize, a plugin): wrap now
            if name in sys.modules:
                self._wrap(sys.modules[name])

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname not in WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _Wrapping(spec.loader, self)
                return spec
        return None

    def _wrap(self, module: ModuleType) -> None:
        cls_name, kind = WATCHED[module.__name__]
        cls = getattr(module, cls_name, None)
        if cls is None or getattr(cls.__init__, "__pitstop_wrapped__", False):
            return
        original, found, instances = cls.__init__, self.found, self.instances

        def __init__(obj: Any, *args: Any, **kwargs: Any) -> None:
            import weakref

            found.append({"kind": kind, "class": type(obj).__name__, "site": innermost_user_site(),
                          "keywords": sorted(kwargs)})
            try:
                instances.append((kind, weakref.ref(obj)))
            except TypeError:
                pass
            original(obj, *args, **kwargs)

        __init__.__pitstop_wrapped__ = True  # type: ignore[attr-defined]
        __init__.__wrapped__ = original  # type: ignore[attr-defined]
        # safe: calls the original with the same arguments and returns what it returns;
        # never undone: it lives in the script's own child process, which ends with the run
        cls.__init__ = __init__


class _Wrapping(importlib.abc.Loader):
    """A loader that runs the real one, then wraps the watched class."""

    def __init__(self, loader: Any, watch: TrainerWatch) -> None:
        self.loader, self.watch = loader, watch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.watch._wrap(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)
