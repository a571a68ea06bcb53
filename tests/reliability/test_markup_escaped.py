"""Issue 18 item 11: Rich markup in a user string (a path like exp[lr=0.1]/m.py or mk[/bad]/m.py)
is shown as written in every table, never swallowed or a MarkupError."""

import io
import shutil

from reliability_helpers import QUICK, F, cli
from rich.console import Console
from rich.table import Table

from pitstop.report.console import literal


def test_literal_shows_markup_as_text():
    table = Table(title="exp[lr=0.1]/m.py")
    table.add_column("where")
    table.add_row("mk[/bad]/m.py")
    buffer = io.StringIO()
    Console(file=buffer, width=80).print(literal(table))
    assert "exp[lr=0.1]/m.py" in buffer.getvalue() and "mk[/bad]/m.py" in buffer.getvalue()


def test_a_bench_of_a_path_with_markup_reports(capsys, tmp_path, monkeypatch):
    for name in ("mk[/bad]", "exp[lr=0.1]"):
        (tmp_path / name).mkdir(parents=True)
        shutil.copy(F, tmp_path / name / "m.py")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "bench", "mk[/bad]/m.py:build", "--input", "float32[B,8]", *QUICK,
                         "--variants", "eval+no_grad")
    assert code == 0, err
    assert "mk[/bad]/m.py:build · batch 2" in out


def test_the_doctor_report_prints_paths_as_written():
    from pitstop import report

    doc = {"kind": "doctor", "script": "mk[/bad]/train.py", "steps": 3,
           "exit": {"status": "exited", "code": 1},
           "findings": [{"code": "PIT101", "name": "stale-gradients", "severity": "error",
                         "where": "exp[lr=0.1]/train.py:12", "message": "grads at [bold]x[/bold]", "step": 2}],
           "watched": {"not_watched": ["exp[lr=0.1]/train.py:40 (a second loop)"]}}
    buffer = io.StringIO()
    report.print_to(Console(file=buffer, width=200), [*report.renderables(doc), "out[/x].json"])
    text = buffer.getvalue()
    for shown in ("exp[lr=0.1]/train.py:12", "grads at [bold]x[/bold]", "exp[lr=0.1]/train.py:40", "out[/x].json"):
        assert shown in text
    assert text == report.text(doc, width=200) + "out[/x].json\n"
