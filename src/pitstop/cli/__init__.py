"""The ``pitstop`` command line: one module per command, each with ``_add_<command>(sub)`` and the handler
it sets as ``func``. Usage errors print one line and exit 2; never a traceback."""

from __future__ import annotations

import argparse
import errno
import os
import sys

from pitstop import __version__
from pitstop.cli import bench, compare, data, doctor, lint, memory, optimize, profile, train
from pitstop.cli._args import _Parser
from pitstop.errors import PitstopError


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (one sub-command per capability)."""
    parser = _Parser(prog="pitstop", description="Measure, diagnose and speed up PyTorch models on your hardware.")
    parser.add_argument("--version", action="version", version=f"pitstop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    bench._add_bench(sub)
    optimize._add_optimize(sub)
    train._add_train(sub)
    doctor._add_doctor(sub)
    profile._add_profile(sub)
    lint._add_lint(sub)
    memory._add_memory(sub)
    data._add_data(sub)
    compare._add_compare(sub)
    compare._add_report(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pitstop`` console script."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # train's parser looks at the script's path: it may fail there
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return args.func(args)
    except PitstopError as exc:
        print(f"pitstop: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pitstop: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `pitstop lint . | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        if exc.errno not in _PATH_ERRORS or exc.filename is None:
            return _internal(exc)
        name = str(exc.filename)
        shown = name if len(name) <= 80 else f"{name[:50]}...{name[-20:]}"
        print(f"pitstop: error: cannot use the path {shown!r} ({exc.strerror}); give another path", file=sys.stderr)
        return 2
    except ValueError as exc:
        if "embedded null byte" not in str(exc):  # os functions refuse a path with a NUL in it
            return _internal(exc)
        print("pitstop: error: a path contains a NUL byte; give another path", file=sys.stderr)
        return 2
    except Exception as exc:
        return _internal(exc)


def entry() -> int:
    """The ``pitstop`` console script and ``python -m pitstop``: ``main``, then a quicker exit
    (``collect_and_freeze``; ``main`` itself stays safe to call in a process that goes on)."""
    code = main()
    from pitstop._exit import collect_and_freeze

    collect_and_freeze()
    return code


_PATH_ERRORS = (errno.ENAMETOOLONG, errno.ELOOP)  # a path given on the command line no file system takes


def _internal(exc: Exception) -> int:
    """A bug in pitstop: one line, the traceback on request."""
    if os.environ.get("PITSTOP_DEBUG"):
        raise exc
    print(f"pitstop: internal error: {type(exc).__name__}: {exc} (set PITSTOP_DEBUG=1 for the traceback "
          "and please report it)", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())
