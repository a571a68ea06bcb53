"""Settings objects: validated once, errors naming the field, resolved against the model and machine."""

import pytest
import torch

from pitstop.bench.settings import BenchSettings
from pitstop.bench.variants.config import GRAD_MODES, parse_variant
from pitstop.cli._args import flag_errors
from pitstop.data import LoaderSettings
from pitstop.engine.source import ModuleSource
from pitstop.errors import SettingError, UsageError
from pitstop.models.inputs import Inputs
from pitstop.optimize.settings import OptimizeSettings


def source(batch=4):
    return ModuleSource(torch.nn.Linear(3, 2), Inputs.coerce(torch.randn(batch, 3)), "Linear")


def test_bench_settings_normalise_what_users_pass():
    s = BenchSettings(batch_sizes=[1, 8], variants=("eval+no_grad", GRAD_MODES[0]), worker_env={"B": "2", "A": "1"})
    assert s.batch_sizes == (1, 8) and s.worker_env == (("A", "1"), ("B", "2"))
    assert s.variants == (parse_variant("eval+no_grad"), GRAD_MODES[0])  # names read once, configs from then on
    assert s.policy.budget_s == 5.0 and s.policy.target == 0.02


@pytest.mark.parametrize(("change", "field"), [
    ({"batch_sizes": (0,)}, "batch_sizes"), ({"threads": 0}, "threads"), ({"variants": ()}, "variants"),
    ({"budget_s": -1.0}, "budget_s"), ({"target": 1.5}, "target"), ({"timeout_s": 0.0}, "timeout_s"),
    ({"replicas": 0}, "replicas"), ({"device": "tpu"}, "device"), ({"min_agreement": 2.0}, "min_agreement"),
])
def test_a_bad_field_is_named_and_the_cli_names_its_flag(change, field):
    with pytest.raises(SettingError) as caught:
        BenchSettings(**change)
    assert caught.value.field == field and str(caught.value).startswith(f"{field}: ")
    with pytest.raises(UsageError, match="^--" + field.replace("_", "-") + ": "), flag_errors():
        BenchSettings(**change)


def test_resolved_fills_batch_sizes_threads_and_device_from_the_source():
    s = BenchSettings().resolved(source(batch=4))
    assert s.batch_sizes == (4,) and s.threads >= 1 and s.device == "cpu"
    assert s.to_dict()["batch_sizes"] == [4] and s.to_dict()["threads"] == s.threads


def test_optimize_settings_resolve_the_search_batch_and_the_sweep():
    latency = OptimizeSettings(batch_sizes=(1, 8), threads=1).resolved(source())
    assert latency.search_batch == 1 and latency.sweep == (1, 8)
    throughput = OptimizeSettings(objective="throughput", batch_sizes=(2, 16), threads=1).resolved(source())
    assert throughput.search_batch == 16 and throughput.sweep == (2, 16)
    assert throughput.bench.batch_sizes == (16,) and throughput.bench.replicas == 2


def test_one_tolerance_sets_both_limits_and_the_json_settings_keep_their_keys():
    s = OptimizeSettings(tolerance=1e-3, batch_size=4, threads=1)
    assert (s.rel_tol, s.reduced_tol) == (1e-3, 1e-3)
    assert list(s.to_dict()) == [
        "batch_size", "objective", "latency_budget_ms", "time_budget_s", "techniques", "finalists", "sweep",
        "batch_sizes", "variants", "threads", "device", "seed", "timeout_s", "isolate", "replicas",
        "tolerance_rel", "tolerance_reduced_rel", "min_agreement", "worker_env", "fidelity_samples", "metric",
        "metric_tolerance", "fidelity_inputs", "timing"]


def test_a_metric_file_that_does_not_exist_names_the_field(tmp_path):
    with pytest.raises(SettingError, match=r"^metric: file 'nope.py' not found; give an existing file.py:function$"):
        OptimizeSettings(metric="nope.py:accuracy")
    (tmp_path / "m.py").write_text("def acc(model):\n    return 1.0\n")
    assert OptimizeSettings(metric=f"{tmp_path}/m.py:acc").metric == f"{tmp_path.resolve()}/m.py:acc"
    with pytest.raises(SettingError, match="fidelity_samples"):
        OptimizeSettings(fidelity_samples=0)


def test_loader_settings_name_the_field():
    with pytest.raises(SettingError, match=r"^batches_per_trial: must be positive, got 0$"):
        LoaderSettings(batches_per_trial=0)
