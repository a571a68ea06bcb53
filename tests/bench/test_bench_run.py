"""Real benches of tiny models in worker processes (the variants run and are timed for real)."""

import json
from pathlib import Path

import jsonschema
import pytest
import torch
from torch import nn

import pitstop
from pitstop.errors import ModelRunError, SettingError, UsageError
from pitstop.schemas import BENCH_SCHEMA

FAST = {"budget_s": 0.3, "threads": 1, "replicas": 1}
MODELS = str(Path(__file__).parents[1] / "fixtures" / "models.py")
FAULTS = str(Path(__file__).with_name("fault_models.py"))


def by_variant(result, batch_size):
    return {r.variant: r for r in result.rows_at(batch_size)}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One bench of the tiny model, all four variants at two batch sizes, shared by the tests that read it."""
    out = tmp_path_factory.mktemp("tiny") / "bench.json"
    result = pitstop.bench(f"{MODELS}:tiny", "float32[B,16]", batch_sizes=[1, 4], json_path=str(out), **FAST)
    return result, json.loads(out.read_text())


def test_tiny_model_all_four_variants_in_workers(tiny_run):
    result, doc = tiny_run
    assert result.complete and not result.interrupted
    assert result.environment["isolation"] == "process"
    for bs in (1, 4):
        rows = by_variant(result, bs)
        assert list(rows) == ["train+grad", "eval+grad", "eval+no_grad", "eval+inference_mode"]
        assert all(r.status == "ok" and len(r.samples_s) >= 10 for r in rows.values())
        assert rows["train+grad"].activation_bytes > 0 and rows["eval+grad"].activation_bytes > 0
        assert rows["eval+no_grad"].activation_bytes == 0 and rows["eval+inference_mode"].activation_bytes == 0
        assert all(r.fidelity["rel_err"] == 0.0 for r in rows.values())
        assert all(r.peak_memory_bytes is not None for r in rows.values())
    jsonschema.validate(doc, BENCH_SCHEMA)
    assert doc["kind"] == "bench" and doc["baseline"] == "train+grad" and len(doc["results"]) == 8
    again = pitstop.BenchResult.from_dict(doc)
    assert again.to_dict() == doc  # the JSON keeps everything needed to re-derive every figure
    row = doc["results"][2]
    assert row["latency_ms"]["n"] == len(row["samples_ms"])
    assert row["speedup"]["vs"] == "train+grad" and row["speedup"]["verdict"] in ("faster", "slower", "within noise")
    assert row["throughput_per_s"] == pytest.approx(1 / (row["latency_ms"]["median"] / 1e3))


def test_replicas_each_time_the_variant_and_are_kept_apart(models_py, tmp_path):
    out = tmp_path / "bench.json"
    result = pitstop.bench(f"{models_py}:tiny", "float32[B,16]", batch_sizes=[2], variants=["eval+no_grad"],
                           budget_s=0.4, threads=1, replicas=2, json_path=str(out))
    row = result.rows[0]
    assert len(row.replica_samples_s) == 2 and all(len(g) >= 5 for g in row.replica_samples_s)
    doc = json.loads(out.read_text())
    groups = doc["results"][0]["samples_by_replica_ms"]
    assert len(groups) == 2 and sorted(t for g in groups for t in g) == sorted(doc["results"][0]["samples_ms"])
    assert doc["settings"]["replicas"] == 2


def test_every_variant_gets_its_minimum_of_calls_even_past_the_budget(models_py):
    # one 50 ms call would use the whole budget; fidelity on the timing batch only (the default 128 rows would be
    # 64 more 50 ms calls per worker, and fidelity is not what this test is about)
    result = pitstop.bench(f"{models_py}:slow", variants=["eval+no_grad", "eval+inference_mode"], budget_s=0.05,
                           threads=1, replicas=1, fidelity_samples=2)
    assert all(r.status == "ok" and len(r.samples_s) >= 10 for r in result.rows)


def test_activation_bytes_grow_with_batch(tiny_run):
    result, _ = tiny_run
    small, large = (result.row(v, b).activation_bytes for v in ("eval+grad",) for b in (1, 4))
    assert large == 4 * small  # the saved ReLU output scales with the batch exactly


@pytest.fixture(scope="module")
def fault_run():
    """One bench whose variants each break differently (tests/bench/fault_models.py): four fault classes, one run.
    Processes: a segfault, a SIGKILL and a hang are only contained if each variant has a worker of its own."""
    return pitstop.bench(f"{FAULTS}:faulty", batch_sizes=[2], timeout_s=4,
                         variants=["train+grad", "eval+grad", "eval+no_grad", "eval+inference_mode",
                                   "eval+no_grad+threads2"], **FAST)


@pytest.mark.parametrize(
    ("variant", "reason"),
    [("eval+grad", "killed by SIGSEGV"),
     ("train+grad", "killed by SIGKILL (out of memory?)")],  # what the OOM killer does
)
def test_a_variant_that_kills_its_worker_is_failed_and_the_rest_reported(fault_run, variant, reason):
    row = fault_run.row(variant, 2)
    assert row.status == "failed" and reason in row.reason
    ok = fault_run.row("eval+no_grad", 2)
    assert ok.status == "ok" and ok.samples_s
    assert fault_run.complete


def test_a_variant_that_raises_is_failed_with_its_message(fault_run):
    row = fault_run.row("eval+inference_mode", 2)
    assert row.status == "failed" and "RuntimeError: sabotaged under inference_mode" in row.reason
    assert fault_run.row("eval+no_grad", 2).status == "ok"


def test_a_variant_that_hangs_times_out(fault_run):
    row = fault_run.row("eval+no_grad+threads2", 2)
    assert row.status == "failed" and "timed out after 4 s" in row.reason
    assert fault_run.row("eval+no_grad", 2).status == "ok"


def test_train_mode_with_dropout_is_noted_not_rejected(models_py):
    # the two variants the note and the fidelity contrast need
    result = pitstop.bench(f"{models_py}:tiny_dropout", batch_sizes=[4], variants=["train+grad", "eval+no_grad"],
                           **FAST)
    train = result.row("train+grad", 4)
    assert train.status == "ok" and "train mode changes the outputs" in train.note
    assert train.fidelity["rel_err"] > 0.01
    assert result.row("eval+no_grad", 4).fidelity["rel_err"] == 0.0


def test_module_object_with_nested_outputs_in_workers(models_py):
    from tests.fixtures.models import two_inputs  # importable by the worker too

    model, inputs = two_inputs()
    result = pitstop.bench(model, inputs, variants=["eval+grad", "eval+no_grad"], **FAST)
    assert result.environment["isolation"] == "process"
    assert all(r.status == "ok" and r.fidelity["rel_err"] == 0.0 for r in result.rows)
    assert result.batch_sizes == [2]


class LocalNet(nn.Module):  # defined in a test module: picklable, importable by a worker
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 3)

    def forward(self, x):
        return self.lin(x)


def test_module_object_resized_to_batch_sizes_and_user_model_untouched():
    model = LocalNet().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    # train+grad is the variant that could leave the user's model changed; eval+no_grad the one that switches modes
    result = pitstop.bench(model, torch.randn(2, 8), batch_sizes=[1, 3], variants=["train+grad", "eval+no_grad"],
                           **FAST)
    assert result.batch_sizes == [1, 3] and result.inputs[3] == "float32[3,8]"
    assert model.training and all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())


def test_inline_mode_runs_in_process():
    result = pitstop.bench(LocalNet(), torch.randn(2, 8), variants=["eval+no_grad"], isolate=False, **FAST)
    assert result.environment["isolation"].startswith("inline")
    assert result.rows[0].status == "ok"


def test_a_main_module_class_runs_inline_with_the_reason():
    Notebook = type("Notebook", (LocalNet,), {"__module__": "__main__"})  # as if defined in a notebook
    model = Notebook().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = pitstop.bench(model, torch.randn(2, 8), **FAST)
    assert "classes defined in __main__ (Notebook)" in result.environment["isolation"]
    assert all(r.status == "ok" and r.samples_s for r in result.rows)
    assert model.training and all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())


def test_threads_are_applied_in_the_worker_and_recorded(models_py):
    result = pitstop.bench(f"{models_py}:tiny", "float32[B,16]", batch_sizes=[1],
                           variants=["eval+no_grad", "eval+no_grad+threads2"], budget_s=0.2, threads=1,
                           replicas=1)
    assert [r.config["threads"] for r in result.rows] == [1, 2]
    assert result.environment["threads"] == 1


def test_first_forward_failure_is_a_model_run_error(models_py):
    with pytest.raises(ModelRunError, match=r"first forward on float32\[2,15\] failed: RuntimeError: mat1"):
        pitstop.bench(f"{models_py}:shape_mismatch", **FAST)


def test_usage_errors():
    with pytest.raises(SettingError, match="returns no example inputs") as missing:
        pitstop.bench("tests/fixtures/models.py:tiny", batch_sizes=[1], **FAST)
    assert missing.value.field == "input" and "--" not in str(missing.value)  # the CLI names the flag
    with pytest.raises(UsageError, match="example_inputs is required"):
        pitstop.bench(LocalNet())
    with pytest.raises(UsageError, match=r"^batch_sizes: need positive integers, got \[0\]$"):
        pitstop.bench(LocalNet(), torch.randn(2, 8), batch_sizes=[0])  # the API names the field, the CLI the flag
    with pytest.raises(UsageError, match=r"bench\(\) got unknown option\(s\) budget; known: .*budget_s"):
        pitstop.bench(LocalNet(), torch.randn(2, 8), budget=1.0)
    with pytest.raises(UsageError, match="expected cpu, cuda or auto"):
        pitstop.bench(LocalNet(), torch.randn(2, 8), device="tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_requested_without_cuda():
    with pytest.raises(UsageError, match="device: cuda asked for, but CUDA is not available here; use cpu"):
        pitstop.bench(LocalNet(), torch.randn(2, 8), device="cuda")


def test_result_renders_as_text_json_and_escaped_html(models_py):
    model = LocalNet()
    result = pitstop.bench(model, torch.randn(2, 8), variants=["train+grad", "eval+inference_mode"], **FAST)
    result.model = "<script>alert(1)</script>"
    text = result.table()
    assert "train+grad" in text and "eval+inference_mode" in text and "speed-ups vs train+grad" in text
    assert json.loads(result.to_json())["results"][1]["variant"] == "eval+inference_mode"
    html = result._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
