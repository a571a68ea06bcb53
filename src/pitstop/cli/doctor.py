"""``pitstop doctor``."""

from __future__ import annotations

import argparse
from typing import Any

from pitstop.cli._args import ScriptParser, _positive, flag_errors
from pitstop.codes import at_least

DOCTOR_EPILOG = """\
examples:
  pitstop doctor train.py --epochs 3              the script's own arguments follow its path
  pitstop doctor train.py --json report.json --fail-on error
  pitstop doctor train.py --epochs 3 -- --json x  after --, everything goes to the script
  pitstop doctor --guard train.py                 skip optimizer steps whose gradients are NaN/Inf
  torchrun --nproc-per-node 2 -m pitstop doctor train.py    one merged report, from rank 0

What it watches (PyTorch's own hooks; nothing in the script changes): optimizer steps, gradients
as they accumulate, module forwards, backward calls and DataLoader waits. It reports
{codes} (`pitstop explain CODE`).
Cost: a few percent (benchmarks/doctor_overhead.py); with CUDA, values stay on the device and are
read every --sync-every steps. pitstop's own options may come before or after the script path;
after it they are pitstop's unless the script defines the same option (then put them first) or
they follow `--`. A crash still prints the report; known autograd errors are
explained. Exit codes: the script's own when it fails, else 1 with findings at or above
--fail-on, 0 otherwise; 2 usage error."""


def _epilog() -> str:
    """The examples, with the run-time codes listed from the code table (``pitstop.codes``)."""
    import textwrap

    from pitstop.codes import CODES

    runtime = [f"{c.code} {c.name}" for c in CODES.values() if "R" in c.kinds]
    listed = ", ".join(runtime[:-1]) + f" and {runtime[-1]}"
    head, _, tail = DOCTOR_EPILOG.partition("{codes}")
    before, _, first = head.rpartition("\n")
    lines = textwrap.wrap(first + listed + tail.split("\n", 1)[0], width=100, break_on_hyphens=False)
    return before + "\n" + "\n".join(lines) + "\n" + tail.split("\n", 1)[1]


def _add_doctor(sub: Any) -> None:
    doc = sub.add_parser("doctor", help="run a training script and catch autograd mistakes as they happen",
                         description="Run an unmodified training script under the doctor and report autograd "
                                     "mistakes with the step, the module or parameter, and the fix.",
                         epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    # safe: a subclass of the parser's own class that only changes how arguments after the script are read;
    # never undone: the parser lives for one command line
    doc.__class__ = _DoctorParser  # pitstop's options after the script path (see _DoctorParser)
    doc.add_argument("script", help="the training script (run as __main__, like python SCRIPT)")
    doc.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    doc.add_argument("--json", metavar="FILE", help="write the JSON report ('-' = stdout)")
    doc.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (loss and gradient-norm "
                     "timelines, findings)")
    doc.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default="error",
                     help="exit 1 when a finding of this severity or worse is found (default: error)")
    doc.add_argument("--guard", action="store_true",
                     help="skip optimizer steps whose gradients are non-finite (reads them every step)")
    doc.add_argument("--sync-every", type=_positive(int), metavar="N",
                     help="steps between reads of device-side values (default: 1 on CPU, 50 with CUDA)")
    doc.add_argument("--select", metavar="CODES", default="", help="only these codes or prefixes, e.g. PIT10,PIT402")
    doc.add_argument("--ignore", metavar="CODES", default="", help="leave these codes or prefixes out")
    doc.add_argument("--timeout-s", type=_positive(float), metavar="S",
                     help="stop the script after S seconds (as Ctrl-C would) and report what was seen")
    doc.set_defaults(func=_doctor)


class _DoctorParser(ScriptParser):
    """``pitstop doctor [OPTIONS] SCRIPT [ARGS]`` (see ``ScriptParser``)."""


def _doctor(args: argparse.Namespace) -> int:
    from pitstop.cli._output import Output
    from pitstop.cli._script import finish_script_run
    from pitstop.doctor.findings import run_time_codes
    from pitstop.engine.scripts import check_script

    check_script(args.script)
    output = Output(args.json, args.html)  # before the run: a bad path must not cost the script's exit code
    with flag_errors():
        select, ignore = run_time_codes([args.select], "select"), run_time_codes([args.ignore], "ignore")
    job = {"command": "doctor", "runner": "pitstop.doctor.child",
           "script": args.script, "args": list(args.args), "guard": args.guard,
           "sync_every": args.sync_every, "select": select, "ignore": ignore}
    found: list[dict[str, Any]] = []

    code = finish_script_run(output, job, args.timeout_s, seen=lambda doc: found.extend(doc.get("findings", [])))
    if code:
        return code
    return 1 if args.fail_on != "never" and any(at_least(f["severity"], args.fail_on) for f in found) else 0
