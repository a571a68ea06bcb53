"""The recipe: a self-contained Python module assembled from the techniques' code.

``apply(model, example_args=(), example_kwargs=None)`` returns an ``nn.Module`` that runs the
model the measured way; ``DETAILS`` records what ran (e.g. which ONNX exporter)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from pitstop.engine.recipe import docstring_literal

if TYPE_CHECKING:
    from pitstop.bench.variants.base import Code
    from pitstop.bench.variants.config import VariantConfig

_TORCH_CALL = '''
class Optimized(torch.nn.Module):
    """The model, called the measured way."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *args, **kwargs):
        args = [prepare_input(a) for a in args]
        kwargs = {{k: prepare_input(v) for k, v in kwargs.items()}}
        with {contexts}:
            return self.model(*args, **kwargs)
'''

_ORT_CALL = '''
ONNX_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.onnx")


def fingerprint(model, args, kwargs):
    """A hash of the model (its structure and weights) and of the inputs' signature: a model.onnx
    left beside this file is reused only when it was exported from the very same."""
    digest = hashlib.sha256(repr(model).encode())
    for name, t in model.state_dict().items():
        digest.update(f"{{name}} {{tuple(t.shape)}} {{t.dtype}}".encode())
        digest.update(t.detach().cpu().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
    for a in [*args, *(kwargs or {{}}).values()]:
        digest.update(repr((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else type(a)).encode())
    return digest.hexdigest()


def exported(model, args, kwargs):
    """ONNX_PATH exported from this model and inputs: rewritten unless its fingerprint matches."""
    stamp, wanted = ONNX_PATH + ".sha256", fingerprint(model, args, kwargs)
    if os.path.exists(ONNX_PATH) and os.path.exists(stamp):
        with open(stamp, encoding="utf-8") as f:
            if f.read().strip() == wanted:
                return ONNX_PATH
    export_onnx(model, args, kwargs, ONNX_PATH)
    with open(stamp, "w", encoding="utf-8") as f:
        f.write(wanted + "\\n")
    return ONNX_PATH


def export_onnx(model, args, kwargs, path):
    """Export with the dynamo exporter (batch dimension dynamic where the model allows it, else
    static); fall back to the TorchScript exporter where dynamo fails."""
    model = copy.deepcopy(model).eval()  # the TorchScript exporter may switch a model to train mode
    batch = torch.export.Dim("batch", min=1, max=4096)
    dynamic = None if kwargs else tuple({{0: batch}} if isinstance(a, torch.Tensor) else None for a in args)
    attempts = [("dynamo, dynamic batch", dict(dynamo=True, dynamic_shapes=dynamic))] if dynamic else []
    attempts += [("dynamo, static shapes", dict(dynamo=True)), ("torchscript, static shapes", dict(dynamo=False))]
    errors = []
    for name, options in attempts:
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", torch.jit.TracerWarning)
                torch.onnx.export(model, tuple(args), path, kwargs=kwargs, **options)
            if any(issubclass(w.category, torch.jit.TracerWarning) and "Python boolean" in str(w.message)
                   for w in caught):  # `if tensor:` traced: the graph keeps the branch this input took
                raise RuntimeError("data-dependent control flow: the TorchScript exporter traced one path "
                                   "(TracerWarning: a tensor converted to a Python boolean), so the ONNX graph "
                                   "would run that path for every input; " + "; ".join(errors[:1]))
            DETAILS["onnx_exporter"] = name + "".join(f" ({{e}})" for e in errors[:1])
            return
        except Exception as exc:
            if name.startswith("torchscript"):
                raise
            errors.append(f"{{name}} failed: {{str(exc).splitlines()[0][:100]}}")


class Optimized(torch.nn.Module):
    """An ONNX Runtime session behind the nn.Module call interface (outputs: a tensor or a tuple)."""

    def __init__(self, session):
        super().__init__()
        self.session = session
        self.names = [i.name for i in session.get_inputs()]

    def forward(self, *args, **kwargs):
        tensors = [prepare_input(a) for a in [*args, *kwargs.values()] if isinstance(a, torch.Tensor)]
        feeds = {{n: t.detach().cpu().numpy() for n, t in zip(self.names, tensors)}}
        outputs = [torch.from_numpy(o) for o in self.session.run(None, feeds)]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def quantize_onnx(path, out):
    """Dynamic int8 of the exported graph (MatMul / Gemm / recurrent weights), by ONNX Runtime."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(path, out, weight_type=QuantType.QInt8)


def session(path, threads):
    """An ONNX Runtime session with all graph optimisations and a fixed thread count."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options, providers={providers!r})
'''


def render(config: VariantConfig, device: str, threads: int, codes: list[Code], header: str, ort: bool) -> str:
    """The recipe module's source."""
    imports = ["import torch", *dict.fromkeys(i for c in codes for i in c.imports)]
    if ort:
        imports = ["import contextlib", "import copy", "import hashlib", "import io", "import os",
                   "import warnings", "", *imports, "import onnxruntime as ort"]
    setup = [f"torch.set_num_threads({threads})", f"model = model.to({device!r})" if device != "cpu" else "",
             *(s for c in codes for s in c.setup)]
    inputs = [f"t = t.to({device!r})" if device != "cpu" else "", *(s for c in codes for s in c.inputs)]
    contexts = ", ".join(x for c in codes for x in c.contexts) or "contextlib.nullcontext()"
    if ort:
        providers = ["CUDAExecutionProvider"] if device == "cuda" else ["CPUExecutionProvider"]
        call = _ORT_CALL.format(providers=providers)
        setup += ["path = exported(model, [prepare_input(a) for a in example_args],",
                  "                {k: prepare_input(v) for k, v in (example_kwargs or {}).items()})"]
        graph = "path"
        if config.quant:  # quantized afresh from the export just checked, never a stale file
            graph = "INT8_PATH"
            setup += ['INT8_PATH = path.replace(".onnx", ".int8.onnx")',
                      "quantize_onnx(path, INT8_PATH)"]
        setup += [f"return Optimized(session({graph}, {threads}))"]
    else:
        call = _TORCH_CALL.format(contexts=contexts)
        setup += ["return Optimized(model)"]
    doc = docstring_literal(f"{header or f'pitstop recipe: {config.name}'}\n\nUse: model = apply(model, example_args); "
                     f"y = model(x). Needs only torch{' and onnxruntime' if ort else ''}.\n")
    return f'''{doc}

{chr(10).join(imports)}

DETAILS = {{}}  # what ran, filled in by apply()


def prepare_input(t):
    """One input, converted the way the measured variant was fed."""
    if not isinstance(t, torch.Tensor):
        return t
{_indent([s for s in inputs if s])}
    return t

{call}

def apply(model, example_args=(), example_kwargs=None):
    """`model` set up the measured way: {config.name}."""
{_indent([s for s in setup if s])}
'''


def _indent(lines: list[str]) -> str:
    return textwrap.indent("\n".join(lines), "    ")
