"""Issue 18 items 5 and 6: the first forward of a spec runs in worker processes (a model that exits
or hangs there is a one-line exit 2 within --timeout-s, not a dead run); the fidelity reference runs
with the run's thread count, not the variant's."""

import time

import pytest
import torch
from faulty import ThreadRecorder
from reliability_helpers import QUICK, F, cli, one_line_error

from pitstop.bench.variants.config import REFERENCE
from pitstop.bench.worker import VariantSession
from pitstop.engine.source import write_payload
from pitstop.models.inputs import Inputs


def test_a_model_that_exits_in_its_first_forward_is_one_line(capsys, result_file):
    before = result_file.read_bytes()
    code, _, err = cli(capsys, "bench", f"{F}:exits_in_eval", "--input", "float32[B,8]", *QUICK,
                       "--json", str(result_file))
    assert code == 2
    assert "first forward on float32[2,8] failed: worker exited with code 7 during setup" in one_line_error(err)
    assert result_file.read_bytes() == before


def test_a_model_that_hangs_in_its_first_forward_times_out(capsys):
    start = time.monotonic()
    code, _, err = cli(capsys, "bench", f"{F}:hangs_under_no_grad", "--input", "float32[B,8]", *QUICK,
                       "--timeout-s", "3")
    assert code == 2 and "timed out after 3 s in setup (timeout_s)" in one_line_error(err)
    assert time.monotonic() - start < 60  # four hung workers share one deadline, not four


def test_the_fidelity_reference_runs_with_the_runs_thread_count(tmp_path):
    module, inputs = ThreadRecorder(), Inputs((torch.randn(2, 8),))
    write_payload(tmp_path / "p.pt", {}, module, inputs, 2, send_weights=False, reference_threads=2)
    session, before = VariantSession(), torch.get_num_threads()
    try:
        session.setup(str(tmp_path / "p.pt"), REFERENCE.to_dict(1), threads=1, device="cpu",
                      policy={"target": 0.02, "budget_s": 0.1}, module=module)
        assert module.threads == [2]  # the reference: the run's count
        assert torch.get_num_threads() == 1  # then the variant's own
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(("factory", "reason"), [
    ("crash_in_one_variant", "killed by SIGSEGV"),
    pytest.param("oom_kill_in_one_variant", "killed by SIGKILL (out of memory?)", marks=pytest.mark.slow),
])
def test_a_crash_in_one_variant_loses_only_that_variant(capsys, tmp_path, factory, reason):
    import json

    out = tmp_path / "r.json"
    code, _, err = cli(capsys, "bench", f"{F}:{factory}", "--input", "float32[B,8]", *QUICK,
                       "--variants", "eval+no_grad,eval+inference_mode", "--json", str(out))
    assert code == 0, err
    rows = {r["variant"]: r for r in json.loads(out.read_text())["results"]}
    assert rows["eval+no_grad"]["status"] == "ok"
    assert rows["eval+inference_mode"]["status"] == "failed" and reason in rows["eval+inference_mode"]["reason"]
