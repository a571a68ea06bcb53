"""The one catalogue of PIT codes, shared by ``lint`` (S) and ``doctor`` (R); the site's PIT code
pages are made from it.

A mistake has one code whichever tool finds it. Codes are stable: never renumber, only add."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pitstop.errors import UsageError

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")  # most severe first


@dataclass(frozen=True)
class Code:
    """One catalogue entry: what the mistake is, why it hurts, and what to write instead."""

    code: str
    name: str
    severity: Severity
    kinds: str  # "S" static (lint), "R" run time (doctor), or both
    summary: str
    fix: str
    example: str = ""  # the mistake, as code
    instead: str = ""  # the correct version


CODES: dict[str, Code] = {c.code: c for c in (
    Code("PIT001", "invalid-file", "error", "S",  # pitstop's own: a file lint cannot read
         "the file could not be linted: a syntax error, or bytes that do not decode in its declared encoding",
         "fix the syntax or the encoding; the other files are linted regardless"),
    Code("PIT101", "stale-gradients", "error", "SR",
         "gradients left from an earlier optimizer step are accumulated into the next one: no zero_grad() "
         "(or p.grad = None) between two step() calls",
         "call optimizer.zero_grad() once per step (before backward or after step); to accumulate on purpose, "
         "zero after each step() and call backward() several times per step",
         "for x, y in loader:\n    loss = crit(model(x), y)\n    loss.backward()\n    opt.step()",
         "for x, y in loader:\n    opt.zero_grad()\n    loss = crit(model(x), y)\n    loss.backward()\n    opt.step()"),
    Code("PIT102", "graph-kept-alive", "error", "SR",
         "a tensor still attached to the autograd graph (usually the loss) outlives its step: appended to a "
         "list, summed into a running total or stored on an object, so memory grows every step",
         "keep numbers, not graphs: loss.item() for scalars, t.detach() (and .cpu()) for tensors",
         "losses.append(loss)\ntotal += loss", "losses.append(loss.item())\ntotal += loss.item()"),
    Code("PIT103", "retain-graph-in-loop", "warning", "SR",
         "backward(retain_graph=True) on every step although no second backward runs over that graph, or a "
         "graph that keeps growing across steps (e.g. an RNN hidden state carried without .detach())",
         "drop retain_graph=True unless a second backward uses the same graph; detach state carried across "
         "steps (h = h.detach())",
         "h = torch.zeros(1, 8)\nfor x in chunks:\n    out, h = rnn(x, h)\n    loss = out.sum()\n"
         "    loss.backward(retain_graph=True)",
         "h = torch.zeros(1, 8)\nfor x in chunks:\n    h = h.detach()\n    out, h = rnn(x, h)\n    loss = out.sum()\n"
         "    loss.backward()"),
    Code("PIT104", "training-without-grad", "error", "SR",
         "the forward pass of a training step, backward() or optimizer.step() runs under torch.no_grad(), "
         "torch.inference_mode() or a function decorated with them, so nothing is learned (or backward fails "
         "with 'element 0 of tensors does not require grad')",
         "run the training forward and backward with autograd on; keep no_grad()/inference_mode() for evaluation",
         "with torch.no_grad():\n    loss = crit(model(x), y)\nloss.backward()",
         "loss = crit(model(x), y)\nloss.backward()"),
    Code("PIT105", "parameter-not-learning", "error", "R",
         "a parameter handed to an optimizer never receives a gradient (None or all zeros) or never changes; or a "
         "trainable parameter that took part in forward/backward is in no optimizer (e.g. the model was rebuilt "
         "after the optimizer was created)",
         "create the optimizer after the final model exists and pass it model.parameters(); freeze on purpose "
         "with requires_grad_(False) and leave frozen parameters out of the optimizer",
         "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel = Net()  # rebuilt: opt holds the old tensors",
         "model = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)"),
    Code("PIT106", "non-finite", "error", "R",
         "NaN or Inf in the loss, an activation or a gradient",
         "look at the first module (forward) or parameter (backward) named; lower the learning rate, clip "
         "gradients, use a stable formulation (log_softmax, logsumexp), or check the input batch",
         "loss = torch.log(torch.softmax(logits, -1))", "loss = torch.log_softmax(logits, -1)"),
    Code("PIT107", "gradient-norm-anomaly", "warning", "R",
         "total or per-layer gradient norm explodes or spikes far above its running median, or vanishes below a "
         "floor for several steps",
         "clip gradients (torch.nn.utils.clip_grad_norm_), lower the learning rate or add warm-up; for vanishing "
         "gradients check initialisation, normalisation and activations"),
    Code("PIT108", "dead-activations", "warning", "R",
         "a ReLU-family activation outputs zero for (nearly) every element over many steps: those units never "
         "learn",
         "lower the learning rate, check initialisation, or use LeakyReLU/GELU"),
    Code("PIT109", "wrong-module-mode", "error", "SR",
         "optimizer steps while the model (or its dropout/batch-norm submodules) is in eval mode; or "
         "evaluation/inference runs with the model in training mode (missing model.eval())",
         "call model.train() before training steps and model.eval() before evaluation",
         "model.eval()\nevaluate(model)\nfor x, y in loader:  # still in eval mode\n    ...\n    opt.step()",
         "model.eval()\nevaluate(model)\nmodel.train()\nfor x, y in loader:\n    ...\n    opt.step()"),
    Code("PIT110", "non-scalar-backward", "error", "R",
         "backward() on a tensor with more than one element and no gradient= argument (usually a loss with "
         "reduction='none')",
         "reduce the loss first (loss.mean() or loss.sum()), or pass gradient= of the same shape",
         "loss = F.cross_entropy(out, y, reduction='none')\nloss.backward()",
         "loss = F.cross_entropy(out, y, reduction='none')\nloss.mean().backward()"),
    Code("PIT201", "inference-with-grad", "warning", "SR",
         "evaluation/inference forward passes run with autograd recording (no torch.no_grad()/"
         "torch.inference_mode()), building graphs that are never used",
         "wrap evaluation in torch.inference_mode() (or torch.no_grad())",
         "model.eval()\npreds = model(x)", "model.eval()\nwith torch.inference_mode():\n    preds = model(x)"),
    Code("PIT202", "prefer-inference-mode", "info", "S",
         "pure inference/serving code uses torch.no_grad() where torch.inference_mode() applies",
         "use torch.inference_mode() when the outputs never re-enter autograd",
         "with torch.no_grad():\n    return model(x)", "with torch.inference_mode():\n    return model(x)"),
    Code("PIT301", "reentrant-checkpoint", "warning", "S",
         "torch.utils.checkpoint.checkpoint(...) / checkpoint_sequential(...) without use_reentrant=False",
         "pass use_reentrant=False (the reentrant variant is deprecated and mishandles inputs without grad)",
         "y = checkpoint(block, x)", "y = checkpoint(block, x, use_reentrant=False)"),
    Code("PIT401", "loader-in-main-process", "info", "S",
         "a training DataLoader with the default num_workers=0; with CUDA in use, also no pin_memory=True",
         "measure with `pitstop data`, then set num_workers (and pin_memory=True with CUDA)",
         "DataLoader(ds, batch_size=32, shuffle=True)",
         "DataLoader(ds, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)"),
    Code("PIT402", "input-stall", "warning", "R",
         "the loop waits on the data loader for a large share of each step (the compute sits idle)",
         "use DataLoader workers (num_workers, persistent_workers, prefetch_factor); `pitstop data` measures them"),
    Code("PIT501", "unsafe-load", "warning", "S",
         "torch.load(...) without weights_only=True (or with weights_only=False): loading a checkpoint can run "
         "arbitrary code",
         "pass weights_only=True", "state = torch.load(path)", "state = torch.load(path, weights_only=True)"),
    Code("PIT601", "gradcheck-low-precision", "warning", "S",
         "gradcheck/gradgradcheck on float32 (or unspecified-dtype) inputs: finite differences need float64",
         "create the inputs with dtype=torch.float64",
         "x = torch.randn(4, requires_grad=True)\ngradcheck(fn, (x,))",
         "x = torch.randn(4, dtype=torch.float64, requires_grad=True)\ngradcheck(fn, (x,))"),
    Code("PIT602", "unstable-logsumexp", "warning", "S",
         "log(sum(exp(x))) or log(softmax(x)) written by hand: overflows for large x",
         "use torch.logsumexp / torch.log_softmax",
         "torch.log(torch.exp(x).sum(-1))", "torch.logsumexp(x, -1)"),
)}
BY_NAME: dict[str, Code] = {c.name: c for c in CODES.values()}


def lookup(key: str) -> Code:
    """A code by number (``PIT102``) or name (``graph-kept-alive``), case-insensitive."""
    found = CODES.get(key.upper()) or BY_NAME.get(key.lower())
    if found is None:
        raise UsageError(f"unknown code {key!r}; `pitstop explain` lists them (e.g. PIT101 or stale-gradients)")
    return found


def at_least(severity: str, threshold: str) -> bool:
    """Whether ``severity`` is at or above ``threshold`` (error > warning > info)."""
    return SEVERITIES.index(severity) <= SEVERITIES.index(threshold)
