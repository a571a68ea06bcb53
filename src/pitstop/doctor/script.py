"""``pitstop doctor train.py ARGS``: an unmodified script run under the doctor.

The script runs through ``runpy`` as ``__main__`` with its own ``sys.argv`` and its directory
first on ``sys.path``, exactly as ``python train.py ARGS`` would. Its exit code passes through;
a crash prints its traceback, is explained when it is a known autograd error, and the report is
printed (and written) either way."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

from pitstop.doctor.api import Doctor
from pitstop.doctor.result import DoctorReport
from pitstop.errors import UsageError


def check_script(path: str) -> Path:
    """The script's path, or a usage error naming the problem."""
    script = Path(path)
    if not script.exists():
        raise UsageError(f"script {path!r} not found; give the path of a Python training script")
    if script.is_dir():
        main = script / "__main__.py"
        if not main.exists():
            raise UsageError(f"{path!r} is a directory without __main__.py; give a .py file")
    return script


def run_script(path: str, args: list[str], doctor: Doctor) -> tuple[DoctorReport, int]:
    """Run the script under ``doctor``; the report and the exit code the script would have had
    (1 for an uncaught exception, its own for ``sys.exit``)."""
    script = check_script(path)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.parent.resolve() if script.is_file() else script.resolve()))
    code = 0
    doctor.attach()
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
        doctor.crash = {"error": "KeyboardInterrupt", "where": ""}
    except BaseException as exc:  # the script's own crash: its traceback, then the explanation
        traceback.print_exception(type(exc), exc, _user_tb(exc.__traceback__))
        doctor.explain(exc)
        code = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        doctor.detach()
    report = doctor.report()
    report.script = " ".join([str(script), *args])
    if doctor.crash is not None and code == 130:
        report.exit = {"status": "interrupted"}
    elif code and report.exit.get("status") == "ok":
        report.exit = {"status": "exited", "code": code}
    return report, code


def _user_tb(tb: Any) -> Any:
    """The traceback from the script's first frame on (runpy and pitstop frames dropped)."""
    here = os.path.dirname(os.path.dirname(__file__))
    while tb is not None and (tb.tb_frame.f_code.co_filename.startswith(here)
                              or "runpy" in tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def publish(report: DoctorReport, *, json_path: str | None = None, verbose: bool = True) -> None:
    """Print the report (rank 0 only under torch.distributed) and write its JSON."""
    rank = int(os.environ.get("RANK", "0"))
    if rank != 0:
        return
    if json_path:
        from pitstop._env import environment
        from pitstop._io import write_atomic

        doc = report.to_dict()
        doc["environment"] = report.environment or environment()
        if json_path == "-":
            import json

            print(json.dumps(doc, indent=2))
        else:
            write_atomic(json_path, doc)
    if verbose and json_path != "-":
        print(report, file=sys.stderr)
