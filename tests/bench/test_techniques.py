"""Each technique's handler: its gate (with the reason) and its code, applied for real to small models."""

import importlib.util

import pytest
import torch
from torch import nn

from pitstop.bench.fidelity import compare, detached
from pitstop.bench.variants.config import VariantConfig, parse_variant
from pitstop.bench.variants.handlers import Target, apply, gate, recipe_source
from pitstop.models.inputs import Inputs
from tests.fixtures.models import Tiny, TinyConv

CPU_BF16 = Target(cpu_flags=frozenset({"avx512_bf16"}), physical_cores=8, has_4d_input=True, quantizable=True,
                  ort_providers=("CPUExecutionProvider",), onnx_installed=True)
HAS_ORT = importlib.util.find_spec("onnxruntime") is not None and importlib.util.find_spec("onnx") is not None


def v(name):
    return parse_variant(f"eval+inference_mode+{name}" if name else "eval+inference_mode")


@pytest.mark.parametrize("name, target_change, reason", [
    ("bf16-autocast", {"cpu_flags": frozenset()}, "no native bf16"),
    ("bf16-weights", {"cpu_flags": frozenset({"avx512f"})}, "no native bf16"),
    ("fp16-autocast", {}, "needs CUDA"),
    ("compile-reduce-overhead", {}, "CUDA graphs"),
    ("compile", {"compiler": False}, "C++ compiler"),
    ("int8-dynamic", {"quantizable": False}, "no Linear / LSTM / GRU"),
    ("int8-dynamic", {"device": "cuda"}, "CPU only"),
    ("channels_last", {"has_4d_input": False}, "4-D"),
    ("onnxruntime", {"ort_providers": ()}, 'pip install "pitstop[onnx]"'),
    ("threads4", {"physical_cores": 2}, "4 threads on 2 physical cores"),
])
def test_gates_skip_with_a_reason(name, target_change, reason):
    assert gate(v(name), CPU_BF16) is None or name.startswith(("fp16", "compile-reduce"))
    target = Target(**{**CPU_BF16.__dict__, **target_change})
    found = gate(v(name), target)
    assert found is not None and reason in found


def test_onnxruntime_does_not_combine_with_torch_techniques():
    reason = gate(parse_variant("eval+inference_mode+bf16-autocast+onnxruntime"), CPU_BF16)
    assert "does not combine with bf16-autocast" in reason


def test_bf16_is_allowed_on_amx_too():
    assert gate(v("bf16-autocast"), Target(cpu_flags=frozenset({"amx_bf16"}))) is None


def run(config, module, inputs, tmp_path, target=CPU_BF16):
    reference = detached(module.eval()(*inputs.args))
    fast, details = apply(config, target, 1, module, inputs, tmp_path)
    with torch.inference_mode():
        out = fast(*inputs.args)
    return fast, out, compare(detached(out), reference), details


def test_grad_mode_code_sets_eval_and_inference_mode(tmp_path):
    model, seen = Tiny().train(), {}
    model.register_forward_hook(lambda m, a, o: seen.update(training=m.training,
                                                            inference=torch.is_inference_mode_enabled()))
    fast, _, fid, _ = run(v(""), model, Inputs((torch.randn(3, 16),)), tmp_path)
    fast(torch.randn(3, 16))
    assert seen == {"training": False, "inference": True} and fid["rel_err"] == 0


def test_bf16_autocast_runs_linear_in_bf16_within_reduced_tolerance(tmp_path):
    _, out, fid, _ = run(v("bf16-autocast"), Tiny(), Inputs((torch.randn(8, 16),)), tmp_path)
    assert out.dtype == torch.bfloat16
    assert 0 < fid["rel_err"] < 2e-2


def test_bf16_weights_cast_parameters_and_inputs(tmp_path):
    fast, out, fid, _ = run(v("bf16-weights"), Tiny(), Inputs((torch.randn(8, 16),)), tmp_path)
    assert {p.dtype for p in fast.parameters()} == {torch.bfloat16}
    assert out.dtype == torch.bfloat16 and 0 < fid["rel_err"] < 2e-2


def test_channels_last_converts_conv_weights_and_inputs(tmp_path):
    fast, _, fid, _ = run(v("channels_last"), TinyConv(), Inputs((torch.randn(2, 3, 16, 16),)), tmp_path)
    conv = fast.model.features[0]
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert fid["rel_err"] < 1e-5


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.head = nn.Embedding(100, 16), nn.Linear(32, 4)
        self.gru = nn.GRU(16, 32, num_layers=2, batch_first=True)

    def forward(self, tokens):
        hidden, _ = self.gru(self.embed(tokens))  # (B, T, 32)
        return self.head(hidden[:, -1])


def test_int8_dynamic_quantizes_linear_layers_with_the_api_recorded(tmp_path):
    target = Target(**{**CPU_BF16.__dict__, "quant_api": "torchao"})  # eager: torch.ao's kernels all the same
    fast, _, fid, details = run(v("int8-dynamic"), Tiny(), Inputs((torch.randn(8, 16),)), tmp_path, target)
    assert type(fast.model.net[0]).__module__.startswith("torch.ao.nn.quantized.dynamic")
    assert details["quant_layers"] == {"Linear": "torch.ao.quantization.quantize_dynamic"}
    assert 0 < fid["rel_err"] < 5e-2


def test_a_gru_model_gets_its_recurrent_layers_quantized(tmp_path):
    model, tokens = GRUClassifier(), torch.randint(0, 100, (4, 12))
    target = Target.detect("cpu", model, [2])
    assert target.quant_layers == ("Linear", "GRU")
    fast, _, fid, details = run(v("int8-dynamic"), model, Inputs((tokens,)), tmp_path, target)
    assert type(fast.model.gru).__module__ == "torch.ao.nn.quantized.dynamic.modules.rnn"
    assert details["quant_layers"]["GRU"] == "torch.ao.quantization.quantize_dynamic"
    assert fid["rel_err"] < 5e-2


def test_compiled_linear_layers_go_to_torchao_and_recurrent_ones_to_torch_ao():
    target = Target(**{**CPU_BF16.__dict__, "quant_api": "torchao", "quant_layers": ("Linear", "LSTM")})
    source = recipe_source(v("int8-dynamic+compile"), target, 1)
    assert "quantize_(model, Int8DynamicActivationInt8WeightConfig())" in source
    assert "quantize_dynamic(  # LSTM: torch.ao\n        model, {torch.nn.LSTM}, dtype=torch.qint8)" in source
    assert source.index("quantize_(model") < source.index("torch.compile(model")


@pytest.mark.skipif(not HAS_ORT, reason='needs pip install "pitstop[onnx]"')
def test_onnxruntime_int8_quantizes_the_exported_graph(tmp_path):
    model, tokens = GRUClassifier(), torch.randint(0, 100, (4, 12))
    target = Target.detect("cpu", model, [2])
    assert gate(v("int8-dynamic+onnxruntime"), target) is None
    _, out, fid, details = run(v("int8-dynamic+onnxruntime"), model, Inputs((tokens,)), tmp_path, target)
    assert (tmp_path / "model.int8.onnx").stat().st_size > 0 and out.shape == (4, 4)
    assert details["quant_api"] == "onnxruntime.quantization.quantize_dynamic" and fid["rel_err"] < 0.1


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """One inductor compile of Tiny (the slow part), read by both compile tests; inductor's
    ``freezing`` setting is noted before it, for the scoping test."""
    import torch._inductor.config as inductor

    before = inductor.freezing
    fast, _, fid, details = run(v("compile"), Tiny(), Inputs((torch.randn(4, 16),)), tmp_path_factory.mktemp("c"))
    return fast, fid, details, before


def test_compile_matches_eager_and_freezes_weights_on_cpu(compiled):
    fast, fid, details, _ = compiled
    assert type(fast.model).__name__ == "OptimizedModule"
    assert details == {"inductor_freezing": True} and fid["rel_err"] < 1e-5


def test_compile_freezing_is_scoped_to_the_compiled_model(compiled):
    import torch._inductor.config as inductor

    *_, before = compiled
    source = recipe_source(v("compile"), CPU_BF16, 1)
    assert inductor.freezing == before  # later torch.compile calls in the user's process are unchanged
    assert 'options={"freezing": True}' in source and "config.freezing" not in source


class Branchy(nn.Module):
    """Data-dependent control flow: the head depends on the sign of the batch mean."""

    def __init__(self):
        super().__init__()
        self.inp, self.pos, self.neg = nn.Linear(16, 16), nn.Linear(16, 4), nn.Linear(16, 4)

    def forward(self, x):
        h = self.inp(x)
        return self.pos(h) if h.mean() > 0 else self.neg(h)


@pytest.mark.skipif(not HAS_ORT, reason='needs pip install "pitstop[onnx]"')
def test_onnxruntime_refuses_a_graph_traced_through_data_dependent_control_flow(tmp_path):
    """torch.export refuses `if tensor:`, the TorchScript exporter traces the branch the example
    took and would run it for every input: the candidate fails, saying why, instead of passing a
    fidelity check on samples that happen to take the same branch."""
    torch.manual_seed(0)
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        run(v("onnxruntime"), Branchy(), Inputs((torch.randn(4, 16),)), tmp_path, Target.detect("cpu", Branchy(), [2]))


@pytest.mark.skipif(not HAS_ORT, reason='needs pip install "pitstop[onnx]"')
def test_onnxruntime_exports_and_runs_the_graph(tmp_path):
    fast, out, fid, details = run(v("onnxruntime"), TinyConv(), Inputs((torch.randn(2, 3, 16, 16),)), tmp_path)
    assert (tmp_path / "model.onnx").stat().st_size > 0
    assert details["onnx_exporter"] == "dynamo, dynamic batch" and isinstance(out, torch.Tensor)
    assert fid["rel_err"] < 1e-5
    assert fast.session.get_session_options().intra_op_num_threads == 1


def test_recipe_source_is_plain_python_without_pitstop():
    source = recipe_source(parse_variant("eval+no_grad+bf16-autocast+compile+channels_last"), CPU_BF16, 2)
    assert "pitstop" not in source.split('"""', 2)[2]  # after the docstring: no pitstop import
    assert "torch.set_num_threads(2)" in source and "torch.compile(model, options=" in source
    assert "with torch.no_grad(), torch.autocast('cpu', dtype=torch.bfloat16):" in source
    compile(source, "recipe.py", "exec")


def test_a_plain_config_is_the_eager_module(tmp_path):
    module = nn.Linear(4, 2)
    fast, _ = apply(VariantConfig("train", "grad"), CPU_BF16, 1, module, Inputs((torch.randn(1, 4),)), tmp_path)
    assert fast.model is module and module.training
