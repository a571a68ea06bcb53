"""Each handler on a small model: the recipe it writes is executed (as a worker does) and trains,
and the technique is really in effect. Gates say why a value cannot run here."""

import copy

import pytest
import torch
from torch import nn
from train_helpers import namespace

from pitstop.train.config import NAIVE, TrainConfig
from pitstop.train.fidelity import gradient_report
from pitstop.train.variants import TrainTarget, gate

torch.manual_seed(0)
X, Y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))


def cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU()),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 4))


def linear() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(192, 16), nn.Tanh(), nn.Linear(16, 4))


def grads(ns, model):
    fast, opt = ns["apply"](model)
    opt.zero_grad(set_to_none=True)
    ns["forward_backward"](fast, ((X,), Y))
    return {n: p.grad.clone() for n, p in model.named_parameters()}


def trains(ns, model, steps=4):
    """Losses of a few steps; the parameters moved."""
    before = [p.detach().clone() for p in model.parameters()]
    fast, opt = ns["apply"](model)
    losses = [float(ns["train_step"](fast, opt, ((X,), Y))) for _ in range(steps)]
    assert all(torch.isfinite(torch.tensor(losses)))
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    return fast, opt, losses


def test_naive_recipe_is_the_plain_loop(tmp_path):
    ns = namespace(NAIVE, tmp_path)
    _, opt, losses = trains(ns, cnn(), steps=10)
    assert losses[-1] < losses[0]
    assert opt.defaults["foreach"] is False and ns["ACCUMULATION"] == 1 and ns["SET_TO_NONE"] is True


def test_bf16_autocast_runs_the_forward_in_bf16(tmp_path):
    ns = namespace(TrainConfig(precision="bf16-autocast"), tmp_path)
    model = cnn()
    seen = []
    model[0].register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    trains(ns, model)
    assert seen[0] == torch.bfloat16 and next(model.parameters()).dtype == torch.float32  # fp32 master weights


@pytest.mark.parametrize("impl", ["foreach", "fused"])
def test_optimizer_implementation(tmp_path, impl):
    ns = namespace(TrainConfig(optimizer=impl), tmp_path)
    _, opt, _ = trains(ns, cnn())
    assert opt.defaults[impl] is True


def test_zero_grad_zeros_keeps_gradient_tensors(tmp_path):
    ns = namespace(TrainConfig(zero_grad="zeros"), tmp_path)
    model = cnn()
    _, opt, _ = trains(ns, model)
    opt.zero_grad(set_to_none=ns["SET_TO_NONE"])
    assert all(p.grad is not None and not p.grad.any() for p in model.parameters())


def test_channels_last_converts_weights_and_inputs(tmp_path):
    ns = namespace(TrainConfig(layout="channels_last"), tmp_path)
    model = cnn()
    trains(ns, model)
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert ns["prepare_input"](X).is_contiguous(memory_format=torch.channels_last)


def test_threads_are_set_by_the_recipe(tmp_path):
    before = torch.get_num_threads()
    try:
        ns = namespace(TrainConfig(threads=1), tmp_path)
        trains(ns, cnn())
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_micro_batches_accumulate_the_same_gradient(tmp_path):
    ns = namespace(TrainConfig(micro_batch=2), tmp_path)
    assert ns["ACCUMULATION"] == 4
    reference = grads(namespace(NAIVE, tmp_path), linear())
    accumulated = grads(ns, linear())
    for name, g in reference.items():
        torch.testing.assert_close(accumulated[name], g, rtol=1e-4, atol=1e-6)
    trains(ns, linear())


def test_checkpointing_recomputes_and_keeps_the_gradients(tmp_path):
    ns = namespace(TrainConfig(checkpoint=("3",)), tmp_path)
    model = cnn()
    reference = grads(namespace(NAIVE, tmp_path), copy.deepcopy(model))
    got = grads(ns, model)
    assert "forward" in vars(model[3])  # the block's forward is wrapped
    report = gradient_report(got, reference)
    assert report["overall_cosine"] > 0.9999 and not report["missing"]


def test_compile_handler_compiles_the_training_step(tmp_path):
    ns = namespace(TrainConfig(compile="default"), tmp_path)
    fast, _, _ = trains(ns, linear(), steps=3)
    assert type(fast).__name__ == "OptimizedModule"


def test_compiled_autograd_is_named_and_wraps_the_backward(tmp_path):
    from tests.fixtures.train_names import parse_train_variant

    config = parse_train_variant("bf16-autocast+compiled-autograd")
    assert config.compile == "compiled-autograd" and config.name == "bf16-autocast+compiled-autograd"
    ns = namespace(config, tmp_path)
    import inspect

    assert "compiled_autograd._enable(torch.compile)" in inspect.getsource(ns["forward_backward"])


def test_compiled_autograd_trains_with_the_eager_gradients(tmp_path):
    from torch._dynamo.utils import counters

    eager = grads(namespace(NAIVE, tmp_path), linear())
    ns = namespace(TrainConfig(compile="compiled-autograd"), tmp_path)
    compiled = grads(ns, linear())
    assert counters["compiled_autograd"]["captures"] >= 1  # the backward really went through compiled autograd
    report = gradient_report(compiled, eager)
    assert report["overall_cosine"] > 0.9999
    trains(ns, linear(), steps=3)


def test_gates_say_why():
    cpu = TrainTarget(batch_size=8, native_bf16=False, has_4d_input=False, physical_cores=2, optimizer_flags=())
    assert "CUDA" in gate(TrainConfig(precision="fp16-autocast"), cpu)
    assert "no native bf16" in gate(TrainConfig(precision="bf16-autocast"), cpu)
    assert "CUDA graphs" in gate(TrainConfig(compile="reduce-overhead"), cpu)
    assert "no fused" in gate(TrainConfig(optimizer="fused"), cpu)
    assert "4-D" in gate(TrainConfig(layout="channels_last"), cpu)
    assert "does not divide" in gate(TrainConfig(micro_batch=3), cpu)
    assert "not smaller" in gate(TrainConfig(micro_batch=8), cpu)
    assert "physical cores" in gate(TrainConfig(threads=4), cpu)
    assert gate(NAIVE, cpu) is None
