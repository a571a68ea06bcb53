"""``pitstop lint`` and ``pitstop explain``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

LINT_EPILOG = """\
examples:
  pitstop lint src/ train.py                       path:line:col: PIT102 [*] message
  pitstop lint . --output-format sarif > lint.sarif
  pitstop lint src/ --json lint.json               the findings as JSON too (kind: lint)
  pitstop lint . --fix                             apply safe fixes ([*]); --unsafe-fixes for [-] too
  pitstop lint . --diff                            show the fixes as a diff, change nothing
  pitstop lint . --select PIT1 --ignore PIT109     codes, prefixes or names (stale-gradients)
  pitstop explain PIT101                           what it is, why it hurts, what to write instead

{rules}
Suppress with `# noqa`, `# noqa: PIT101` or `# noqa: stale-gradients`; configure in pyproject.toml
under [tool.pitstop.lint] (select, ignore, per-file-ignores, exclude).
Exit codes: 0 no findings at or above --fail-on (default warning), 1 findings, 2 usage error."""


def lint_epilog() -> str:
    """The examples, then the rule list generated from the code table (``pitstop.codes``)."""
    import textwrap

    from pitstop.lint.explain import static_codes_line

    rules = textwrap.fill(f"Rules (static codes of the shared catalogue; `pitstop doctor` reports the same codes at "
                          f"run time): {static_codes_line()}; PIT001 invalid-file marks a file that could not be "
                          f"parsed or decoded (the run goes on).", 100, break_on_hyphens=False)
    return LINT_EPILOG.format(rules=rules)


def _add_lint(sub: Any) -> None:
    from pitstop.lint.output import FORMATS

    lint = sub.add_parser("lint", help="find autograd mistakes in source code, with fixes",
                          description="Find the training-loop and inference mistakes of the PIT catalogue in "
                                      "Python source, statically, with safe and unsafe fixes.",
                          epilog=lint_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    lint.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .); the project modules "
                      "they import are read for cross-file facts, never reported on")
    lint.add_argument("--output-format", choices=FORMATS, default="concise", help="default: concise")
    lint.add_argument("--select", action="append", default=[], metavar="CODES",
                      help="only these codes, prefixes or names (comma-separated; replaces the config's)")
    lint.add_argument("--ignore", action="append", default=[], metavar="CODES", help="leave these out")
    lint.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="skip matching paths")
    lint.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    lint.add_argument("--unsafe-fixes", action="store_true", help="with --fix/--diff, apply unsafe fixes too")
    lint.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    lint.add_argument("--json", metavar="FILE", help="also write the findings as JSON to FILE (- = stdout, instead of "
                      "the text output)")
    lint.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default="warning",
                      help="exit 1 when a finding of this severity or worse remains (default: warning)")
    lint.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                      help="colour the concise/full output (auto: only on a terminal)")
    lint.set_defaults(func=_lint)
    explain = sub.add_parser("explain", help="explain a PIT code: what, why, example, fix",
                             description="Explain a PIT code (number or name); without one, list them all.")
    explain.add_argument("code", nargs="?", help="e.g. PIT101 or stale-gradients")
    explain.set_defaults(func=_explain)


def _lint(args: argparse.Namespace) -> int:
    from pitstop._env import environment
    from pitstop.codes import at_least
    from pitstop.lint import lint
    from pitstop.lint import output as out

    fmt = "json" if args.json == "-" else args.output_format
    from pitstop._io import check_writable
    from pitstop.cli._args import flag_errors

    with flag_errors():
        if args.json and args.json != "-":
            check_writable(args.json, "json")
        result = lint(args.paths, select=args.select, ignore=args.ignore, exclude=args.exclude,
                      fix=args.fix and not args.diff, unsafe_fixes=args.unsafe_fixes, diff=args.diff,
                      keep_sources=fmt == "full")
    colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    if args.diff:
        sys.stdout.write("".join(result.diffs))
        fixes = sum(result.fixed.values())
        print(f"Would fix {fixes} finding(s) in {len(result.fixed)} file(s).", file=sys.stderr)
        return 1 if result.diffs else 0
    if args.json and args.json != "-":
        from pitstop._io import write_atomic

        write_atomic(args.json, out.json_document(result.findings, result.files, result.lines, environment()))
    if fmt == "json":
        print(out.dumps(out.json_document(result.findings, result.files, result.lines, environment())))
    elif fmt == "sarif":
        from pathlib import Path

        print(out.dumps(out.sarif(result.findings, Path.cwd())))
    elif fmt == "github":
        for line in out.github(result.findings):
            print(line)
    else:  # the text formats render the document's findings, as `pitstop report` does
        from pitstop.report.lint import concise_lines, full_lines, summary_line

        found = [out.finding_dict(d) for d in result.findings]
        lines = full_lines(found, result.sources, colour, args.unsafe_fixes) if fmt == "full" \
            else concise_lines(found, colour, args.unsafe_fixes)
        for line in lines:
            print(line)
        if result.fixed:
            print(f"Fixed {sum(result.fixed.values())} finding(s) in {len(result.fixed)} file(s).")
        print(summary_line(found, result.files, args.unsafe_fixes))
    if args.fail_on == "never":
        return 0
    return 1 if any(at_least(d.level, args.fail_on) for d in result.findings) else 0


def _explain(args: argparse.Namespace) -> int:
    from pitstop.lint.explain import catalogue, explain

    if not args.code:
        print("\n".join(catalogue()))
        return 0
    print(explain(args.code))
    return 0
