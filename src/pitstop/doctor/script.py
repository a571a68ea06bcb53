"""``pitstop doctor train.py ARGS``: an unmodified script run under the doctor.

The script runs as ``__main__`` with its own ``sys.argv``, an absolute ``__file__`` and its
directory first on ``sys.path``, exactly as ``python train.py ARGS`` would. Its exit code passes through;
a crash prints its traceback, is explained when it is a known autograd error, and the report is
printed (and written) either way."""

from __future__ import annotations

import builtins
import importlib.machinery
import os
import sys
import traceback
import types
from pathlib import Path
from typing import Any

from pitstop._optional import quiet_torchao
from pitstop.doctor.api import Doctor
from pitstop.doctor.result import DoctorReport
from pitstop.engine.scripts import check_script
from pitstop.hooks.sites import crash_site


def run_script(path: str, args: list[str], doctor: Doctor) -> tuple[DoctorReport, int]:
    """Run the script under ``doctor``; the report and the exit code the script would have had
    (1 for an uncaught exception, its own for ``sys.exit``, 130 for Ctrl-C). The script's
    namespace stays alive until the doctor has finished: end-of-run checks still see its model."""
    script = check_script(path)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *args]  # argv[0] as typed, like python SCRIPT
    sys.path.insert(0, str(script.parent.resolve() if script.is_file() else script.resolve()))
    code, namespace = 0, types.ModuleType("__main__")
    quiet_torchao()  # a transformers script imports torchao: no warnings about binaries that cannot load
    doctor.attach()
    try:
        _exec_main(script, namespace)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt as exc:
        code = 130
        doctor.crash = {"error": f"KeyboardInterrupt ({str(exc) or 'Ctrl-C'})", "where": crash_site(exc)}
    except BaseException as exc:  # the script's own crash: its traceback, then the explanation
        traceback.print_exception(type(exc), exc, _user_tb(exc.__traceback__))
        doctor.explain(exc)
        code = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        doctor.detach()
    report = doctor.report()
    del namespace  # the script's objects may go now
    report.script = " ".join([str(script), *args])
    if code == 130:
        report.exit = {"status": "interrupted", **(doctor.crash or {})}
    elif code and report.exit.get("status") == "ok":
        report.exit = {"status": "exited", "code": code}
    return report, code


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


def publish(report: DoctorReport, *, json_path: str | None = None, verbose: bool = True) -> None:
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
