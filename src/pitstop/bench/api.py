"""``pitstop.bench``: the Python entry point of the bench scenario."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from pitstop._settings import with_options
from pitstop.bench.result import BenchResult
from pitstop.bench.runner import BenchRunner
from pitstop.bench.settings import BenchSettings
from pitstop.engine.source import make_source


def bench(
    model: nn.Module | str,
    example_inputs: Any = None,
    *,
    settings: BenchSettings | None = None,
    json_path: Any = None,  # a path, or a pitstop._io.ResultFile
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
    **options: Any,
) -> BenchResult:
    """Measure the grad-mode variants of ``model`` at each batch size.

    ``model`` is an ``nn.Module`` (with ``example_inputs``: a tensor, a tuple, a dict or
    ``Inputs``) or a spec string (``"zoo:mlp"``, ``"file.py:build"``; ``example_inputs`` may then
    be an input spec such as ``"float32[B,1024]"``). ``options`` are ``BenchSettings`` fields
    (``batch_sizes``, ``variants``, ``threads``, ``budget_s``, ``target``, ``timeout_s``,
    ``device``, ``seed``, ``isolate``, ``replicas``, ``worker_env``, ...), applied over
    ``settings``. Each variant runs in ``replicas`` worker processes of its own (``isolate=False``
    runs inline, in one); ``worker_env`` adds environment variables to every worker (e.g.
    allocator tunables, to measure their effect). ``json_path`` is rewritten as results finish.
    Returns a ``BenchResult`` with ``.table()``, ``.to_json()``."""
    settings = with_options(BenchSettings, settings, options, "bench")
    source = make_source(model, example_inputs, settings.seed)
    sink = None
    if json_path:
        from pitstop._io import result_file

        out = result_file(json_path)  # checked now, before minutes of measuring

        def sink(result: BenchResult) -> None:
            out.write(result.to_dict())  # an empty run keeps the old file; a partial one a good file

    return BenchRunner(source, settings, on_event=on_event, sink=sink).run()
