import pytest
import torch
from torch import nn

from pitstop.bench.fidelity import flatten, is_logits
from pitstop.errors import ModelLoadError, ModelSpecError
from pitstop.models.spec import parse_model_spec
from pitstop.models.zoo import ZOO


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_zoo_model_builds_and_runs_on_its_input_spec(name):
    spec = parse_model_spec(f"zoo:{name}")
    model, inputs = spec.build(batch_size=2)
    assert inputs is None
    x = spec.default_input_spec().make(2)
    with torch.no_grad():
        out = flatten(model.eval()(*x.args))[0]
    assert out.shape[0] == 2


@pytest.mark.parametrize(("name", "params_m", "first_output"), [
    ("resnet50", 25.6, (2, 1000)), ("bert-base", 109.5, (2, 128, 768)), ("gpt2", 124.4, (2, 128, 50257)),
])
def test_zoo_extra_models_are_the_published_architectures(name, params_m, first_output):
    model, _ = parse_model_spec(f"zoo:{name}").build(2)
    assert sum(p.numel() for p in model.parameters()) / 1e6 == pytest.approx(params_m, abs=0.1)
    with torch.no_grad():
        out = model.eval()(*parse_model_spec(f"zoo:{name}").default_input_spec().make(2).args)
    assert tuple(flatten(out)[0].shape) == first_output
    assert is_logits(out) == (name != "bert-base")  # BERT returns hidden states, not logits


def test_zoo_mlp_is_the_published_architecture():
    model, _ = parse_model_spec("zoo:mlp").build(1)
    linears = [m for m in model if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(1024, 2048), (2048, 2048), (2048, 1024), (1024, 10)]


def test_same_seed_builds_identical_weights():
    a, _ = parse_model_spec("zoo:cnn").build(1, seed=3)
    b, _ = parse_model_spec("zoo:cnn").build(1, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_unknown_zoo_name_lists_valid_names():
    valid = "bert-base, cnn, gpt2, gpt2-tiny, llama-tiny, mlp, qwen2-tiny, resnet50, transformer"
    with pytest.raises(ModelSpecError, match=f"unknown zoo model 'resnet9'; valid: {valid}"):
        parse_model_spec("zoo:resnet9")


def test_missing_file(tmp_path):
    with pytest.raises(ModelSpecError, match="does not exist"):
        parse_model_spec(f"{tmp_path}/nope.py:build")


def test_missing_factory_lists_callables(models_py):
    with pytest.raises(ModelSpecError, match=r"has no attribute 'buld'.*tiny"):
        parse_model_spec(f"{models_py}:buld").build(1)


def test_spec_without_factory():
    with pytest.raises(ModelSpecError, match="needs a factory"):
        parse_model_spec("model.py")


def test_factory_that_raises_shows_its_last_line(models_py):
    with pytest.raises(ModelLoadError, match="the factory raised ValueError: bad hyper-parameter: depth=-1"):
        parse_model_spec(f"{models_py}:factory_raises").build(1)


def test_factory_returning_a_non_module(models_py):
    with pytest.raises(ModelLoadError, match=r"returned int, expected an nn\.Module"):
        parse_model_spec(f"{models_py}:not_a_module").build(1)


def test_factory_with_batch_size_and_inputs(models_py):
    model, inputs = parse_model_spec(f"{models_py}:tiny_with_inputs").build(batch_size=7)
    assert isinstance(model, nn.Module) and inputs.args[0].shape == (7, 16)


def test_factory_inputs_are_resized_when_it_ignores_batch_size(models_py):
    _, inputs = parse_model_spec(f"{models_py}:tiny_dropout").build(batch_size=9)
    assert inputs.args[0].shape == (9, 16)


def test_package_module_spec(tmp_path, monkeypatch):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "nets.py").write_text("import torch\ndef make():\n    return torch.nn.Linear(3, 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    model, _ = parse_model_spec("mypkg.nets:make").build(1)
    assert isinstance(model, nn.Linear)


def test_missing_module():
    with pytest.raises(ModelSpecError, match="no module named 'no_such_pkg'"):
        parse_model_spec("no_such_pkg.nets:make").build(1)
