"""An unmodified training script run in this process under a watcher (the doctor, the profiler):
as ``python SCRIPT ARGS`` would run it (``__main__``, its own ``sys.argv``, its directory first on
``sys.path``), with its exit code passed through (1 for an uncaught exception, its own for
``sys.exit``, 130 for Ctrl-C) and a crash's traceback printed from the script's first frame. The
watcher attaches before the first line and detaches after the last; ``publish`` prints a report and
writes its JSON by the result file's rules."""

from __future__ import annotations

import builtins
import importlib.machinery
import os
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pitstop._optional import quiet_torchao
from pitstop.engine.scripts import check_script
from pitstop.hooks.sites import crash_site, format_exception_line

__all__ = ["ScriptRun", "exit_record", "publish", "run_main"]


@dataclass
class ScriptRun:
    """How the script ended: the command as run, the exit code it would have had, the crash (an
    uncaught exception or Ctrl-C: ``{"error", "where"}``), and its namespace (alive until the caller
    has read what it needs: end-of-run checks still see the script's model)."""

    command: str
    code: int
    crash: dict[str, str] | None = None
    namespace: types.ModuleType | None = field(default=None, repr=False)


def _crash_of(exc: BaseException) -> dict[str, str]:
    return {"error": format_exception_line(exc), "where": crash_site(exc)}


def run_main(path: str, args: list[str], attach: Callable[[], Any], detach: Callable[[], Any],
             explain: Callable[[BaseException], dict[str, str] | None] = _crash_of) -> ScriptRun:
    """Run the script between ``attach()`` and ``detach()``; ``explain(exc)`` records an uncaught
    exception (the doctor turns a known autograd error into a finding) and returns the crash."""
    script = check_script(path)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *args]  # argv[0] as typed, like python SCRIPT
    sys.path.insert(0, str(script.parent.resolve() if script.is_file() else script.resolve()))
    code, namespace, crash = 0, types.ModuleType("__main__"), None
    quiet_torchao()  # a transformers script imports torchao: no warnings about binaries that cannot load
    attach()
    try:
        _exec_main(script, namespace)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt as exc:
        code = 130
        crash = {"error": f"KeyboardInterrupt ({str(exc) or 'Ctrl-C'})", "where": crash_site(exc)}
    except BaseException as exc:  # the script's own crash: its traceback, then the explanation
        traceback.print_exception(type(exc), exc, _user_tb(exc.__traceback__))
        crash = explain(exc)
        code = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        detach()
    return ScriptRun(" ".join([str(script), *args]), code, crash, namespace)


def exit_record(run: ScriptRun) -> dict[str, Any]:
    """The report's ``exit``: ok, crashed (with the error and where), interrupted or exited (code)."""
    if run.code == 130:
        return {"status": "interrupted", **(run.crash or {})}
    if run.crash:
        return {"status": "crashed", "error": run.crash["error"], "where": run.crash.get("where", "")}
    return {"status": "exited", "code": run.code} if run.code else {"status": "ok"}


def _exec_main(script: Path, module: types.ModuleType) -> None:
    """Execute ``script`` as ``__main__`` in ``module`` as ``python SCRIPT`` does: ``__file__``
    absolute (a script that changes directory still finds the files next to it), the module in
    ``sys.modules`` while it runs (pickle and multiprocessing find its classes)."""
    main = script / "__main__.py" if script.is_dir() else script
    file = os.path.abspath(main)
    code = compile(main.read_bytes(), file, "exec", dont_inherit=True)
    module.__dict__.update(__file__=file, __cached__=None, __builtins__=builtins,
                           __loader__=importlib.machinery.SourceFileLoader("__main__", file))
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _user_tb(tb: Any) -> Any:
    """The traceback from the script's first frame on (runpy and pitstop frames dropped)."""
    here = os.path.dirname(os.path.dirname(__file__))
    while tb is not None and (tb.tb_frame.f_code.co_filename.startswith(here)
                              or "runpy" in tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def publish(report: Any, *, json_path: str | None = None, verbose: bool = True) -> None:
    """Print the report (rank 0 only under torch.distributed) and write its JSON by the result
    file's rules: a run that measured nothing, or ended early, never replaces a good report (it
    goes beside it, ``NAME.partial.json``, and the printout says where)."""
    rank = int(os.environ.get("RANK", "0"))
    if rank != 0:
        return
    if json_path:
        from pitstop._env import environment
        from pitstop._io import ResultFile

        doc = report.to_dict()
        doc["environment"] = report.environment or environment()
        if json_path == "-":
            import json

            print(json.dumps(doc, indent=2))
        else:
            result = ResultFile(json_path)
            result.write(doc)
            if verbose:
                print(result.note(), file=sys.stderr)
    if verbose and json_path != "-":
        print(report, file=sys.stderr)
