import torch
from torch import nn

from pitstop.engine.peak import activation_bytes, peak_bytes
from pitstop.models.spec import parse_model_spec


def _mlp_call(grad_context):
    model, _ = parse_model_spec("zoo:mlp").build(1)
    x = torch.randn(256, 1024)

    def call():
        with grad_context():
            return model(x)

    return model, x, call


def test_mlp_activation_bytes_are_exact():
    model, x, call = _mlp_call(torch.enable_grad)
    exclude = [*model.parameters(), x]
    # ReLU outputs kept for backward (each Linear after them saves the same storage): 2048+2048+1024 floats per row
    assert activation_bytes(call, exclude) == 256 * (2048 + 2048 + 1024) * 4  # 5.0 MiB, as measured by hand


def test_no_grad_and_inference_mode_keep_nothing():
    for ctx in (torch.no_grad, torch.inference_mode):
        model, x, call = _mlp_call(ctx)
        assert activation_bytes(call, [*model.parameters(), x]) == 0


def test_inputs_and_parameters_are_counted_only_when_not_excluded():
    model, x, call = _mlp_call(torch.enable_grad)
    with_all = activation_bytes(call)
    # weights are saved where their layer's input needs grad: not the first layer's (x does not); biases never
    params = sum(m.weight.numel() * 4 for m in list(model)[2::2])
    assert with_all == 256 * (2048 + 2048 + 1024) * 4 + x.numel() * 4 + params


def test_shared_storage_is_counted_once():
    w = nn.Parameter(torch.randn(64, 64))
    x = torch.randn(64, 64)

    def call():
        y = torch.tanh(x @ w)  # tanh saves its output y
        return (y * y).sum()  # mul saves y twice: same storage

    assert activation_bytes(call, [w, x]) == 64 * 64 * 4


def test_peak_bytes_sees_a_large_allocation():
    n = 64 * 2**20  # 64 MiB

    def call():
        t = torch.ones(n // 4)  # touched, so resident
        return t.sum()

    peak, how = peak_bytes(call, torch.device("cpu"))
    assert how == "peak RSS above the worker's baseline"
    assert 0.9 * n <= peak <= 3 * n
