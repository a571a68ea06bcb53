import pytest
import torch
from torch import nn

from pitstop.bench.variants.config import GRAD_MODES, VariantConfig, parse_variant, prepare
from pitstop.errors import SettingError, UsageError
from pitstop.models.inputs import Inputs


def test_grad_mode_names_follow_the_contract():
    assert [v.name for v in GRAD_MODES] == ["train+grad", "eval+grad", "eval+no_grad", "eval+inference_mode"]
    assert parse_variant("eval+inference_mode+threads1").name == "eval+inference_mode+threads1"


def test_config_round_trips_and_states_every_axis():
    config = VariantConfig("eval", "no_grad").to_dict(threads=2)
    assert config == {"mode": "eval", "grad": "no_grad", "precision": "fp32", "compile": None, "quant": None,
                      "layout": None, "threads": 2, "runtime": "torch"}
    assert VariantConfig.from_dict(config).name == "eval+no_grad+threads2"


@pytest.mark.parametrize("name", ["eval", "eval+fast", "test+grad", "eval+no_grad+bf16"])
def test_bad_variant_names(name):
    with pytest.raises(SettingError, match=r"^variants: ") as bad:  # the field: the CLI says --variants
        parse_variant(name)
    assert bad.value.field == "variants"


def test_unknown_axis_value_is_a_usage_error():
    with pytest.raises(UsageError, match="precision must be one of"):
        VariantConfig(precision="int4")


@pytest.mark.parametrize("name", [
    "eval+inference_mode+bf16-autocast+compile", "eval+no_grad+compile-max-autotune+channels_last",
    "eval+inference_mode+int8-dynamic+threads1", "eval+inference_mode+onnxruntime", "eval+no_grad+bf16-weights",
])
def test_technique_names_round_trip(name):
    config = parse_variant(name)
    assert config.name == name
    assert VariantConfig.from_dict(config.to_dict(threads=2)) == config.__class__(**{
        **config.to_dict(threads=2), "threads": config.threads or 2})


def test_a_name_sets_each_axis_once():
    with pytest.raises(UsageError, match="twice"):
        parse_variant("eval+no_grad+bf16-autocast+bf16-weights")


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.seen = {}

    def forward(self, x):
        self.seen = {"training": self.training, "grad": torch.is_grad_enabled(),
                     "inference": torch.is_inference_mode_enabled()}
        return self.lin(x)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (GRAD_MODES[0], {"training": True, "grad": True, "inference": False}),
        (GRAD_MODES[1], {"training": False, "grad": True, "inference": False}),
        (GRAD_MODES[2], {"training": False, "grad": False, "inference": False}),
        (GRAD_MODES[3], {"training": False, "grad": False, "inference": True}),
    ],
)
def test_prepare_applies_mode_and_grad(config, expected):
    model = Probe()
    with torch.no_grad():  # the caller's own grad mode must not leak into the variant
        out = prepare(config, model, Inputs((torch.randn(3, 2),)))()
    assert model.seen == expected
    assert out.requires_grad is expected["grad"]
