"""Configs, settings and the problem (optimizer and loss as code): pure values, no processes."""

import pytest
import torch
from torch import nn

from pitstop.errors import UsageError
from pitstop.train.config import NAIVE, TrainConfig, parse_train_variant
from pitstop.train.problem import LossSpec, OptimizerSpec
from pitstop.train.settings import TrainSettings


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
    with pytest.raises(UsageError, match="unknown part 'turbo'"):
        parse_train_variant("bf16-autocast+turbo")


@pytest.mark.parametrize(("kwargs", "flag"), [({"trajectory_steps": 5}, "--trajectory-steps"),
                                              ({"time_budget_s": 1}, "--time-budget-s"),
                                              ({"tolerance": 2.0}, "--tolerance"), ({"batch_size": 0}, "--batch-size"),
                                              ({"axes": ("warp",)}, "--techniques"), ({"steps": 0}, "--steps")])
def test_settings_errors_name_the_flag(kwargs, flag):
    with pytest.raises(UsageError, match=flag):
        TrainSettings(**{"batch_size": 8, "threads": 2, **kwargs})


def test_optimizer_is_read_from_the_factory_as_code():
    model = nn.Linear(4, 2)
    spec = OptimizerSpec.from_factory(lambda p: torch.optim.AdamW(p, lr=3e-4, weight_decay=0.1), model)
    code = spec.code("fused")
    assert code.startswith("torch.optim.AdamW(model.parameters(), ") and "lr=0.0003" in code and "fused=True" in code
    assert "decoupled_weight_decay" not in code  # in AdamW's param group, not its constructor
    built = eval(code, {"torch": torch, "model": model})
    assert built.defaults["fused"] and built.defaults["lr"] == 3e-4


def test_optimizer_errors_say_what_to_do():
    model = nn.Linear(4, 2)
    with pytest.raises(UsageError, match="parameter groups"):
        OptimizerSpec.from_factory(lambda p: torch.optim.SGD([{"params": [model.weight]}, {"params": [model.bias]}],
                                                             lr=0.1), model)
    with pytest.raises(UsageError, match="unknown optimizer 'adamz'"):
        OptimizerSpec.named("adamz")
    assert OptimizerSpec.named("adamw", lr=1e-3).name == "AdamW"
    assert OptimizerSpec.named("lbfgs").flags == ()  # no foreach/fused: that axis is gated


def test_loss_specs():
    ce = LossSpec.of(nn.CrossEntropyLoss(label_smoothing=0.1), True)
    assert "label_smoothing=0.1" in ce.setup[0]
    fn = LossSpec.of(torch.nn.functional.mse_loss, True)
    assert fn.imports == ("from torch.nn.functional import mse_loss",)
    assert "mean" in LossSpec.of(None, False).body
    with pytest.raises(UsageError, match="importable"):
        LossSpec.of(lambda out, y: out.sum(), True)
    with pytest.raises(UsageError, match="holds tensors"):
        LossSpec.of(nn.CrossEntropyLoss(weight=torch.ones(3)), True)
