"""Helpers of the reliability tests: the CLI run in-process, one-line error checks."""

from pitstop.cli import main

F = "tests/reliability/faulty.py"
QUICK = ["--batch-sizes", "2", "--budget-s", "0.1", "--replicas", "1", "--threads", "1"]


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """``pitstop ARGS`` in this process: (exit code, stdout, stderr); argparse's exit included."""
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    """The single line of a usage error (never a traceback)."""
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]
