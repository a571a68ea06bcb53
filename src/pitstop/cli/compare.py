"""``pitstop compare`` and ``pitstop report``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pitstop.cli._args import _fraction, flag_errors
from pitstop.cli._output import Output
from pitstop.errors import UsageError


def _add_compare(sub: Any) -> None:
    cmp = sub.add_parser("compare", help="compare two bench/optimize/train results: regression, improvement or noise",
                         description="Match variants between two `--json` results and say, from the raw samples, "
                                     "whether each got slower, faster or stayed within noise. Bench and optimize "
                                     "results compare with each other, train results with train results; a side "
                                     "that was interrupted is named (compared on partial results).",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="example:\n  pitstop compare before.json after.json --threshold 0.05\n\n"
                                "Exit codes: 0 variants compared and no regression beyond --threshold, 1 a "
                                "regression (slower beyond noise and by more than the threshold) or nothing "
                                "compared (no variant at the same batch size in both, or a side with no measured "
                                "rows), 2 usage error (a file that is not a result, results of different kinds).")
    cmp.add_argument("before", help="the reference result (JSON from pitstop bench/optimize/train --json)")
    cmp.add_argument("after", help="the result to check")
    cmp.add_argument("--threshold", type=_fraction, default=0.05,
                     help="a regression must be slower by more than this fraction (default: 0.05)")
    cmp.add_argument("--json", metavar="FILE", help="write the comparison as JSON ('-' = stdout)")
    cmp.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    cmp.set_defaults(func=_compare)


def _compare(args: argparse.Namespace) -> int:
    from pitstop.compare.api import compare

    output = Output(args.json, args.html)
    with flag_errors(), _malformed(f"{args.before!r} or {args.after!r}"):
        result = compare(args.before, args.after, args.threshold)
    output.finish(result.to_dict())
    return 1 if result.regressions or result.nothing else 0  # nothing compared is no pass


def _add_report(sub: Any) -> None:
    rep = sub.add_parser("report", help="show a saved --json result again, or turn it into an HTML report",
                         description="Render any saved pitstop JSON result (bench, optimize, train, profile, doctor, "
                                     "lint, memory, data, compare): the terminal report the command printed, and "
                                     "with --html one self-contained HTML file (inline CSS and SVG charts, no "
                                     "network).",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         epilog="examples:\n  pitstop report result.json\n  pitstop report result.json --html "
                                "result.html\n\nExit codes: 0 rendered, 2 usage error (not a pitstop result).")
    rep.add_argument("result", help="a JSON file written with --json")
    rep.add_argument("--html", metavar="FILE", help="also write the self-contained HTML report")
    rep.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from pitstop._document import read_document
    from pitstop.report import kind_of, renderables

    doc = read_document(args.result)
    kind_of(doc)
    output = Output(None, args.html)
    with _malformed(repr(args.result)):
        items = renderables(doc)
        output.finish(doc, items)
    return 0


@contextmanager
def _malformed(what: str) -> Iterator[None]:
    """A hand-edited or foreign file that passed the structural checks but still lacks what a
    renderer reads: a one-line usage error naming the file, not an internal error."""
    from pitstop.errors import PitstopError, last_line

    try:
        yield
    except PitstopError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as exc:
        raise UsageError(f"{what} is not a complete pitstop result ({last_line(exc)}); "
                         "give the JSON result a pitstop command wrote") from None
