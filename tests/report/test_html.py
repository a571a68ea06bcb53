"""Self-contained HTML reports: well-formed, no external resources, escaped, charts present; and
in headless Chromium (Debian's `chromium`; `.ci/run` installs it): no console errors, charts
rendered, a screenshot under the test's temp dir."""

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import pitstop
from pitstop.cli import main
from pitstop.report.pages import render

HOSTILE = "<script>alert('x')</script>&\"'"
SCREENSHOTS = Path(__file__).parents[2] / "docs" / "screenshots"


class Checker(HTMLParser):
    """Tags balance (void elements aside) and nothing is loaded from outside."""

    VOID = frozenset({"meta", "br", "img", "hr", "input", "link", "circle", "line", "path", "rect"})

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.svgs, self.scripts = [], [], 0, 0

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts += 1
        if tag == "svg":
            self.svgs += 1
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.errors.append(f"external {name}: {value}")
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
        else:
            self.stack.pop()


def check(html):
    c = Checker()
    c.feed(html)
    assert not c.errors and not c.stack, (c.errors, c.stack)
    assert c.scripts == 0 and "http://" not in html and "https://" not in html
    assert "@import" not in html and "url(" not in html
    return c


def bench_doc(model=HOSTILE):
    rng = np.random.default_rng(0)
    rows = []
    for batch in (1, 8):
        for variant, ms in (("train+grad", 10.0), ("eval+no_grad", 7.0), (f"eval+inference_mode{HOSTILE}", 6.5)):
            samples = list(ms * batch ** 0.7 * (1 + 0.02 * rng.standard_normal(30)))
            lat = {"median": float(np.median(samples)), "p10": min(samples), "p90": max(samples),
                   "ci95": [float(np.median(samples)) * 0.98, float(np.median(samples)) * 1.02], "n": 30}
            row = {"variant": variant, "batch_size": batch, "status": "ok", "latency_ms": lat, "samples_ms": samples,
                   "throughput_per_s": 1e3 / lat["median"], "fidelity": {"rel_err": 0.0}}
            if variant != "train+grad":
                row["speedup"] = {"vs": "train+grad", "median": 10.0 / ms, "ci95": [10.0 / ms * 0.97, 10.0 / ms * 1.03],
                                  "verdict": "faster"}
            rows.append(row)
    return {"pitstop": "0.1.0", "schema": 1, "kind": "bench", "model": model, "baseline": "train+grad",
            "environment": {"torch": "2.13.0", "cpu": HOSTILE, "threads": 2}, "results": rows,
            "advice": f"advice {HOSTILE}"}


def doctor_doc():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pitstop.doctor() as dr:
        for i in range(12):
            loss = model(torch.randn(4, 8)).pow(2).mean() * (1e4 if i == 10 else 1.0)
            loss.backward()
            opt.step()  # noqa: PIT101 (no zero_grad on purpose: the report shows it)
    doc = dr.report().to_dict()
    doc["script"] = f"train.py {HOSTILE}"
    return doc


def memory_doc():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    doc = pitstop.memory.activation_report(model, torch.randn(8, 16), repeats=1).to_dict()
    doc["model"] = HOSTILE
    return doc


def compare_doc(tmp_path):
    from pitstop.compare.api import compare

    a, b = bench_doc("m"), bench_doc("m")
    for r in b["results"]:
        r["samples_ms"] = [t * 1.2 for t in r["samples_ms"]]
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    return compare(str(tmp_path / "a.json"), str(tmp_path / "b.json")).to_dict()


@pytest.fixture
def docs(tmp_path):
    return {"bench": bench_doc(), "doctor": doctor_doc(), "memory": memory_doc(), "compare": compare_doc(tmp_path)}


def test_every_report_is_well_formed_self_contained_escaped_and_has_charts(docs):
    for kind, doc in docs.items():
        html = render(doc)
        c = check(html)
        assert "<script>alert" not in html, kind
        assert c.svgs >= {"bench": 5, "doctor": 2}.get(kind, 1), kind
        for svg in re.findall(r"<svg.*?</svg>", html, flags=re.S):
            assert "<title" in svg and "<desc" in svg  # a title and a text alternative
            assert re.search(r"<(rect|path|circle)", svg)  # not empty
    bench = render(docs["bench"])
    assert "Latency vs throughput" in bench and 'class="front"' in bench  # the Pareto front
    assert "milliseconds per call" in bench and "1x = train+grad" in bench
    doctor = render(docs["doctor"])
    assert "Loss per backward" in doctor and "Gradient norm" in doctor and 'class="mark"' in doctor
    assert "PIT101" in doctor


def test_jupyter_reprs_render_the_same_charts():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    html = pitstop.memory.activation_report(model, torch.randn(8, 16), repeats=1)._repr_html_()
    assert "<svg" in html and "<style>" in html
    check(f"<div>{html}</div>")


def test_cli_html_and_report_command(tmp_path, capsys):
    (tmp_path / "r.json").write_text(json.dumps(bench_doc()))
    assert main(["report", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html")]) == 0
    check((tmp_path / "r.html").read_text())
    assert main(["report", str(tmp_path / "nope.json"), "--html", str(tmp_path / "x.html")]) == 2
    (tmp_path / "odd.json").write_text(json.dumps({"kind": "frobnicate"}))
    capsys.readouterr()
    assert main(["report", str(tmp_path / "odd.json"), "--html", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert "no report for kind 'frobnicate'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.html").exists()


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(chromium() is None and not os.environ.get("CI"), reason="Debian chromium not installed "
                    "(.ci/run installs it; apt-get install chromium)")
def test_reports_in_headless_chromium(docs, tmp_path):
    browser = chromium()
    assert browser, "chromium is required in CI (.ci/run installs it)"
    for kind, doc in docs.items():
        page = tmp_path / f"{kind}.html"
        page.write_text(render(doc))
        shot = tmp_path / f"{kind}.png"
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1100,1400",
                 "--enable-logging=stderr", "--v=0"]
        out = subprocess.run([browser, *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True,
                             text=True, timeout=120)
        console = [ln for ln in out.stderr.splitlines() if "CONSOLE" in ln]
        assert not console, console
        assert shot.exists() and shot.stat().st_size > 10_000, out.stderr[-1000:]
        dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                             timeout=120).stdout
        assert dom.count("<svg") >= 1 and re.search(r"<rect|<path", dom)
        if os.environ.get("PITSTOP_SCREENSHOTS"):  # refresh the README's pictures (plain names, not hostile ones)
            plain = json.loads(json.dumps(doc).replace(json.dumps(HOSTILE)[1:-1], ""))
            page.write_text(render(plain))
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            subprocess.run([browser, *flags, f"--screenshot={SCREENSHOTS / f'{kind}.png'}", page.as_uri()],
                           capture_output=True, timeout=120, check=True)
