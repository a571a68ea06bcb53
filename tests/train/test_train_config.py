"""Configs, settings and the problem (optimizer and loss as code): pure values, no processes."""

import pytest
import torch
from torch import nn

from pitstop.errors import UsageError
from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.problem import LossSpec, OptimizerSpec
from pitstop.train.settings import TrainSettings
from tests.fixtures.train_names import parse_train_variant


def test_names_round_trip_through_parse_and_json():
    config = TrainConfig(precision="bf16-autocast", compile="default", optimizer="fused", micro_batch=8, threads=1)
    assert config.name == "bf16-autocast+compile+fused+micro8+threads1"
    assert parse_train_variant(config.name) == config
    assert TrainConfig.from_dict(config.to_dict(2), run_threads=2) == config
    assert NAIVE.name == "naive" and parse_train_variant("naive") == NAIVE
    assert TrainConfig.from_dict(NAIVE.to_dict(4), run_threads=4) == NAIVE  # the run's threads are the default
    assert TrainConfig(checkpoint=("a", "b")).name == "checkpoint2"


@pytest.mark.parametrize(("kwargs", "field"), [({"precision": "fp8"}, "precision"),
                                               ({"optimizer": "magic"}, "optimizer"),
                                               ({"micro_batch": 0}, "micro_batch"), ({"threads": -1}, "threads")])
def test_bad_config_names_the_field(kwargs, field):
    with pytest.raises(UsageError, match=field):
        TrainConfig(**kwargs)


def test_parse_rejects_unknown_parts():
    with pytest.raises(ValueError, match="unknown part 'turbo'"):
        parse_train_variant("bf16-autocast+turbo")


@pytest.mark.parametrize(("kwargs", "field", "flag"), [
    ({"trajectory_steps": 5}, "trajectory_steps", "--trajectory-steps"),
    ({"time_budget_s": 1}, "time_budget_s", "--time-budget-s"), ({"tolerance": 2.0}, "tolerance", "--tolerance"),
    ({"batch_size": 0}, "batch_size", "--batch-size"), ({"techniques": ("warp",)}, "techniques", "--techniques"),
    ({"steps": 0}, "steps", "--steps"), ({"time_budget_s": float("inf")}, "time_budget_s", "--time-budget-s"),
    ({"seed": 2**63}, "seed", "--seed")])
def test_settings_errors_name_the_field_and_the_cli_names_the_flag(kwargs, field, flag):
    """The library says the field (``SettingError``), the CLI the flag that set it: one rule."""
    from pitstop.cli._args import flag_errors
    from pitstop.cli.train import _RENAMED
    from pitstop.errors import SettingError

    with pytest.raises(SettingError, match=f"^{field}: ") as caught:
        TrainSettings(**{"batch_size": 8, "threads": 2, **kwargs})
    assert caught.value.field == field
    with pytest.raises(UsageError, match=f"^{flag}: "), flag_errors(_RENAMED):
        TrainSettings(**{"batch_size": 8, "threads": 2, **kwargs})


def test_optimizer_is_read_from_the_factory_as_code():
    model = nn.Linear(4, 2)
    spec = OptimizerSpec.from_factory(lambda p: torch.optim.AdamW(p, lr=3e-4, weight_decay=0.1), model)
    code = spec.code("fused")
    assert code.startswith("torch.optim.AdamW(model.parameters(), ") and "lr=0.0003" in code and "fused=True" in code
    assert "decoupled_weight_decay" not in code  # in AdamW's param group, not its constructor
    built = eval(code, {"torch": torch, "model": model})
    assert built.defaults["fused"] and built.defaults["lr"] == 3e-4


def test_parameter_groups_are_reproduced_by_name_with_their_own_options():
    """nanoGPT's decay / no-decay groups: each group's parameters (by name) and options kept; the
    implementation flag is pitstop's to vary."""
    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    spec = OptimizerSpec.from_factory(lambda model: torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=6e-4,
        betas=(0.9, 0.95), fused=False), model)
    ns = {"torch": torch}
    exec(spec.groups_code(), ns)
    built = eval(spec.code("fused"), {**ns, "model": model})
    assert [g["weight_decay"] for g in built.param_groups] == [0.1, 0.0]
    assert [[id(p) for p in g["params"]] for g in built.param_groups] == [[id(p) for p in decay],
                                                                        [id(p) for p in no_decay]]
    assert built.defaults["fused"] and built.defaults["betas"] == (0.9, 0.95)
    again = OptimizerSpec.from_dict(spec.to_dict())
    assert again == spec


def test_optimizer_errors_say_what_to_do():
    model = nn.Linear(4, 2)
    with pytest.raises(UsageError, match="not the model's parameters"):
        OptimizerSpec.from_factory(lambda p: torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1), model)
    with pytest.raises(UsageError, match="unknown optimizer 'adamz'"):
        OptimizerSpec.named("adamz")
    with pytest.raises(UsageError, match="LBFGS steps with a closure"):
        OptimizerSpec.named("lbfgs")
    with pytest.raises(UsageError, match="weight_decay: must not be negative"):
        OptimizerSpec.named("adamw", lr=1e-3, weight_decay=-1.0)
    with pytest.raises(UsageError, match="lr: must be a finite number"):
        OptimizerSpec.named("adamw", lr=float("nan"))
    assert OptimizerSpec.named("adamw", lr=1e-3).name == "AdamW"
    assert OptimizerSpec.named("rprop").flags == ("foreach",)


def test_loss_specs():
    ce = LossSpec.of(nn.CrossEntropyLoss(label_smoothing=0.1), True)
    assert "label_smoothing=0.1" in ce.setup[0]
    fn = LossSpec.of(torch.nn.functional.mse_loss, True)
    assert "importlib.import_module('torch.nn.functional'), 'mse_loss'" in fn.setup[0]
    with pytest.raises(UsageError, match="no loss function and no target"):
        LossSpec.of(None, False)  # never the mean of the logits
    with pytest.raises(UsageError, match="top level of a module"):
        LossSpec.of(lambda out, y: out.sum(), True)
    with pytest.raises(UsageError, match="holds tensors"):
        LossSpec.of(nn.CrossEntropyLoss(weight=torch.ones(3)), True)


def test_an_axis_narrowed_to_one_option_probes_only_that_and_round_trips():
    """``--techniques precision=fp16-autocast``: the precision axis tries fp16 alone (the GPU benchmark's
    fp16 + GradScaler path where bf16 would win); the JSON names it as given; a wrong option or an
    axis without fixed options is one line that lists the choices."""
    from pitstop.errors import SettingError
    from pitstop.train.settings import options

    s = TrainSettings(batch_size=8, threads=2, techniques=("precision=fp16-autocast", "optimizer"))
    assert s.techniques == ("precision", "optimizer") and s.only == (("precision", "fp16-autocast"),)
    assert options(s, "precision") == ("fp16-autocast",) and options(s, "optimizer") == ("foreach", "fused")
    assert s.to_dict()["techniques"] == ["optimizer", "precision=fp16-autocast"]
    again = TrainSettings(batch_size=8, threads=2, techniques=tuple(s.to_dict()["techniques"]))
    assert (again.techniques, again.only) == (("optimizer", "precision"), s.only)
    with pytest.raises(SettingError, match="unknown precision=fp8; choose from precision=bf16-autocast, "
                                           "precision=fp16-autocast"):
        TrainSettings(batch_size=8, threads=2, techniques=("precision=fp8",))
    with pytest.raises(SettingError, match="threads has no options to choose from: name it alone"):
        TrainSettings(batch_size=8, threads=2, techniques=("threads=4",))
