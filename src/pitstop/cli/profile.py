"""``pitstop profile``."""

from __future__ import annotations

import argparse
from typing import Any

from pitstop.cli._args import _positive, flag_errors

PROFILE_EPILOG = """\
examples:
  pitstop profile train.py --epochs 1            the script's own arguments follow its path
  pitstop profile --json prof.json --html prof.html train.py
  pitstop profile --trace traces/ train.py       also write torch.profiler's Chrome trace of the active steps

In Python (a notebook):
  with pitstop.profile() as prof:
      for batch in loader: ...
  print(prof.report)

What it measures, per optimizer step, from the doctor's hooks (nothing in the script changes):
data wait (DataLoader __next__), host-to-device copies (CUDA), forward, backward, optimizer step,
host-device syncs (.item(), .cpu(), float(t), print(t), nonzero, a tensor as a condition) at
their source lines, and "other"; they add up to the step's wall time (CUDA: CUDA events, no
synchronisation added inside the steps). torch.profiler runs only on a few scheduled steps
(--wait, then 1 warm-up, then --active) for the top ops per phase; those steps and the first are
left out of the phase statistics. The verdict ranks the causes found by the time a fix would save,
each with the pitstop command that measures the fix. Exit codes: the script's own; 2 usage error."""


def _add_profile(sub: Any) -> None:
    p = sub.add_parser("profile", help="where a training script's step time goes, and what to try first",
                       description="Run an unmodified training script and break each optimizer step into data, "
                                   "h2d, forward, backward, optimizer, sync and other, with the syncs' lines, the "
                                   "top ops and a ranked verdict.",
                       epilog=PROFILE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("script", help="the training script (run as __main__, like python SCRIPT)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    p.add_argument("--json", metavar="FILE", help="write the JSON report ('-' = stdout)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (stacked phases per step, "
                   "step-time timeline)")
    p.add_argument("--trace", metavar="DIR", help="write torch.profiler's Chrome trace of the active steps to DIR")
    p.add_argument("--wait", type=_positive(int), default=5, metavar="N",
                   help="steps before torch.profiler's warm-up step (default: 5)")
    p.add_argument("--active", type=_positive(int), default=3, metavar="N",
                   help="steps torch.profiler records, at most 10 (default: 3)")
    p.add_argument("--no-drill-down", action="store_true", help="leave torch.profiler off (no top ops)")
    p.add_argument("--timeout-s", type=_positive(float), metavar="S",
                   help="stop the script after S seconds (as Ctrl-C would) and report the steps measured")
    p.set_defaults(func=_profile)


def _profile(args: argparse.Namespace) -> int:
    from pitstop.cli._output import Output, check_trace_dir
    from pitstop.cli._script import finish_script_run
    from pitstop.engine.scripts import check_script
    from pitstop.errors import UsageError
    from pitstop.profile.settings import ProfileSettings

    check_script(args.script)
    output = Output(args.json, args.html)  # checked and made absolute before the script runs
    if args.trace and args.no_drill_down:
        raise UsageError("--trace needs the drill-down; drop --no-drill-down")
    trace = check_trace_dir(args.trace) if args.trace else None
    with flag_errors():
        settings = ProfileSettings(wait=args.wait, active=args.active, drill_down=not args.no_drill_down, trace=trace)
    job = {"command": "profile", "runner": "pitstop.profile.child", "script": args.script, "args": list(args.args),
           "settings": vars(settings)}
    return finish_script_run(output, job, args.timeout_s)
