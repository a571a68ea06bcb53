"""Syncs found at the user's lines, counted per measured step; library-internal reads left alone;
Tensor's methods restored afterwards."""

import inspect

import torch
from torch import nn

import pitstop


def line_of(marker):
    src, first = inspect.getsourcelines(test_each_kind_of_sync_is_found_at_its_line)
    return first + next(i for i, text in enumerate(src) if marker in text)


def test_each_kind_of_sync_is_found_at_its_line(capsys):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)  # Adam reads its step counters with .item() inside torch
    with pitstop.profile(drill_down=False) as prof:
        for _ in range(6):
            opt.zero_grad()
            out = model(torch.randn(8, 16))
            loss = out.pow(2).mean()
            value = loss.item()  # SYNC-ITEM
            scale = float(loss)  # SYNC-FLOAT
            if loss > 1e9:  # SYNC-BOOL
                print("never")
            print(loss)  # SYNC-PRINT
            positives = (out > 0).nonzero()  # SYNC-NONZERO
            assert torch.nonzero(input=out > 0).shape == positives.shape  # SYNC-TORCH-NONZERO
            loss.backward()
            opt.step()
    assert value == scale and positives.ndim == 2
    rows = {(r["where"].rsplit(":", 1)[1], r["kind"]): r for r in prof.report.syncs}
    expected = {"SYNC-ITEM": ".item()", "SYNC-FLOAT": "float(tensor)", "SYNC-BOOL": "tensor as a condition "
                "(data-dependent control flow)", "SYNC-PRINT": "print(tensor)", "SYNC-NONZERO": ".nonzero()",
                "SYNC-TORCH-NONZERO": ".nonzero()"}
    for marker, kind in expected.items():
        row = rows[(str(line_of(marker)), kind)]
        assert row["per_step"] == 1.0 and row["ms"] >= 0, row
    assert all(r["where"].startswith("tests/profile/") or "test_profile_syncs.py" in r["where"]
               for r in prof.report.syncs)  # nothing from inside torch (Adam's counters) or pitstop
    assert len(prof.report.syncs) == len(expected)
    assert "tensor(" in capsys.readouterr().out  # the print itself still printed


def test_methods_are_restored_after_the_run():
    before = {name: vars(torch.Tensor).get(name) for name in ("item", "__bool__", "__repr__", "__format__", "cpu")}
    nonzero = torch.nonzero
    with pitstop.profile(drill_down=False):
        assert vars(torch.Tensor).get("item") is not None  # wrapped while profiling
        assert torch.ones(1).item() == 1.0
    assert {name: vars(torch.Tensor).get(name) for name in before} == before
    assert torch.nonzero is nonzero and torch.Tensor.item is torch._C.TensorBase.item


def test_a_sync_inside_a_library_is_listed_at_the_users_line_that_called_it(tmp_path, monkeypatch):
    """Issue 27 item 3: a library that owns the loop (Lightning's apply_func, a metrics package)
    reads the tensor; the row names the user's line that led there, the library's line after it."""
    import importlib
    import sys

    lib = tmp_path / "site-packages" / "fakemetrics"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("def log_value(t):\n    return t.item()  # the library's read\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    fakemetrics = importlib.import_module("fakemetrics")
    try:
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with pitstop.profile(drill_down=False) as prof:
            for _ in range(4):
                opt.zero_grad()
                loss = model(torch.randn(8, 4)).pow(2).mean()
                fakemetrics.log_value(loss)  # SYNC-VIA-LIBRARY
                loss.backward()
                opt.step()
    finally:
        sys.modules.pop("fakemetrics", None)
    (row,) = prof.report.syncs
    src, first = inspect.getsourcelines(test_a_sync_inside_a_library_is_listed_at_the_users_line_that_called_it)
    line = first + next(i for i, text in enumerate(src) if "SYNC-VIA-LIBRARY" in text and "log_value" in text)
    assert row["where"].startswith("tests/profile/test_profile_syncs.py:" + str(line)) or \
        row["where"].split(" (via")[0].endswith(f"test_profile_syncs.py:{line}"), row["where"]
    assert row["where"].endswith("(via fakemetrics/__init__.py:2)"), row["where"]
    assert row["kind"] == ".item()" and row["per_step"] == 1.0
