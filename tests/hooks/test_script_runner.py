"""The script runner the doctor and the profiler share (``hooks/script.run_main``): the script runs as
``python SCRIPT ARGS`` would run it, between the watcher's attach and detach, and how it ended becomes
the report's ``exit`` record."""

from __future__ import annotations

from pathlib import Path

import pytest

from pitstop.hooks.script import exit_record, run_main


@pytest.mark.parametrize(("body", "code", "status"), [
    ("import sys\nprint(sys.argv[1:])\n", 0, "ok"),
    ("import sys\nsys.exit(3)\n", 3, "exited"),
    ("raise ValueError('bad batch')\n", 1, "crashed"),
    ("raise KeyboardInterrupt\n", 130, "interrupted"),
])
def test_how_the_script_ended_is_its_exit_record(tmp_path: Path, capsys: pytest.CaptureFixture, body: str,
                                                 code: int, status: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(body)
    calls: list[str] = []
    run = run_main(str(script), ["--epochs", "1"], lambda: calls.append("attach"), lambda: calls.append("detach"))
    assert calls == ["attach", "detach"] and run.code == code
    record = exit_record(run)
    assert record["status"] == status
    if status == "crashed":
        assert "ValueError: bad batch" in record["error"] and "train.py" in record["where"]
        assert "ValueError: bad batch" in capsys.readouterr().err  # the script's own traceback
    if status == "ok":
        assert "['--epochs', '1']" in capsys.readouterr().out and run.command.endswith("train.py --epochs 1")
