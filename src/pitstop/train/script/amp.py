"""fp16 autocast with loss scaling as edits of a plain training loop: the whole AMP pattern at the
script's own lines, as PyTorch's AMP recipe writes it.

- one ``GradScaler`` for the script, made after its imports (fp16 gradients underflow without
  loss scaling; bf16 needs none);
- each backward through it: ``scaler.scale(loss).backward()``;
- ``scaler.unscale_(optimizer)`` before the first ``clip_grad_norm_`` / ``clip_grad_value_`` of
  each step (clipping scaled gradients clips at a threshold 65,536 times too small: the common
  mistake an edit gets right every time);
- each optimizer stepped through it, ``scaler.step(optimizer)`` (several optimizers: each one),
  then ``scaler.update()`` once, after the last step of the iteration.

The discovery run records where ``optimizer.step()`` and the clipping functions are called from
(``watch``); in each variant's process ``count_skips`` counts the steps the scaler skipped (an
inf or NaN gradient), which the gate holds to 1% as the model form does."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from pitstop.train.script.frames import innermost_user_site
from pitstop.train.script.source_edit import NotMechanical, _call_at, _callee_name, _indent, _replace, _segment

CLIPS = ("clip_grad_norm_", "clip_grad_value_")
_SKIPS = {"updates": 0, "skipped": 0}
_RECORDED = 16  # step calls recorded: the loop's sites show within its first iterations


def watch(sites: dict[str, Any]) -> None:
    """Record (discovery) the user lines that call ``optimizer.step()`` and clip gradients."""
    sites["steps"], sites["clips"] = [], []
    calls = [0]

    def pre(optimizer: Any, args: Any, kwargs: Any) -> None:
        calls[0] += 1
        if calls[0] <= _RECORDED:
            _add(sites["steps"], innermost_user_site(), closure=bool(args[1:] or kwargs.get("closure")))

    register_optimizer_step_pre_hook(pre)
    modules = [torch.nn.utils, torch.nn.utils.clip_grad]
    for name in CLIPS:
        original = getattr(torch.nn.utils.clip_grad, name)

        def clip(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            _add(sites["clips"], innermost_user_site())
            return _original(*args, **kwargs)

        for module in modules:
            if getattr(module, name, None) is original:
                setattr(module, name, clip)


def _add(found: list[dict[str, Any]], site: dict[str, Any] | None, **extra: Any) -> None:
    if site is not None and not any((s["file"], s["line"]) == (site["file"], site["line"]) for s in found):
        found.append({**site, **extra})


def count_skips() -> None:
    """Count, in this process, the ``GradScaler.update()`` calls and those that lowered the scale
    (the step it skipped: an inf or NaN among the gradients)."""
    original = torch.amp.GradScaler.update

    def update(scaler: Any, new_scale: Any = None) -> None:
        before = scaler.get_scale() if scaler.is_enabled() else None
        original(scaler, new_scale)
        if before is not None and new_scale is None:
            _SKIPS["updates"] += 1
            _SKIPS["skipped"] += scaler.get_scale() < before

    # safe: calls the original with the same arguments and returns what it returns;
    # never undone: it lives in the script's own child process, which ends with the run
    torch.amp.GradScaler.update = update  # type: ignore[method-assign,assignment]


def skipped() -> int:
    """The steps the scaler skipped in this process so far."""
    return _SKIPS["skipped"]


# -- planning -----------------------------------------------------------------------------------

def scaler_changes(found: dict[str, Any], device: str, change: Any) -> list[Any]:
    """The scaler's edits of a plain loop (``change(what, file, line, text)`` makes each one), or
    ``NotMechanical`` with why they cannot be made safely."""
    sites = found.get("sites") or {}
    steps = sites.get("steps") or []
    backs = [p["backward"][-1] for p in sites.get("pairs") or [] if p.get("backward")]
    if not backs and sites.get("backward"):
        backs = [sites["backward"]["stack"][-1]]
    if not steps or not backs:
        raise NotMechanical("the optimizer step or the backward was not seen in your files")
    if any(s.get("closure") for s in steps):
        raise NotMechanical("the optimizer steps with a closure: GradScaler cannot step it")
    clips = sites.get("clips") or []
    files = {s["file"] for s in [*steps, *backs, *clips]}
    if len(files) > 1:
        raise NotMechanical("the backward, the optimizer step and the gradient clipping are in different files: "
                            "one GradScaler must see them all")
    file = files.pop()
    text = Path(file).read_text(encoding="utf-8")
    tree = ast.parse(text)
    if any(isinstance(n, ast.Call) and _callee_name(n).endswith("GradScaler") for n in ast.walk(tree)):
        raise NotMechanical("the script builds its own GradScaler: turn on its own fp16 option instead")
    if len({(s["first_line"], s["function"]) for s in steps}) > 1:
        raise NotMechanical("the optimizers step in different functions: the scaler's update() must follow the last")
    name = "scaler" if "scaler" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} else "amp_scaler"
    lines = text.splitlines(True)
    stepped = sorted({s["line"]: s for s in steps}.values(), key=lambda s: s["line"])
    receivers = {s["line"]: _receiver(tree, lines, s["line"], "step") for s in stepped}
    caveat = _unstepped_branch(tree, [s["line"] for s in stepped], [b["line"] for b in backs])
    out = [change("after-imports", file, 1, f"{name} = torch.amp.GradScaler({device.split(':')[0]!r})  "
                                             "# fp16 gradients underflow without loss scaling" + caveat)]
    out += [change("scale", file, line, name) for line in sorted({b["line"] for b in backs})]
    out += [change("scaler-step", file, s["line"], name) for s in stepped]
    out.append(change("after", file, stepped[-1]["line"], f"{name}.update()"))
    unscaled: set[int] = set()
    for clip in sorted(clips, key=lambda c: c["line"]):
        after = [s for s in stepped if s["line"] > clip["line"] and (s["first_line"], s["function"]) ==
                 (clip["first_line"], clip["function"])]
        if not after:
            raise NotMechanical(f"gradients are clipped at line {clip['line']}, outside the function that steps the "
                                "optimizer: scaler.unscale_(optimizer) must come right before it")
        if after[0]["line"] not in unscaled:  # unscale_ once per optimizer and step
            unscaled.add(after[0]["line"])
            out.append(change("before", file, clip["line"], f"{name}.unscale_({receivers[after[0]['line']]})"))
    return out


def _unstepped_branch(tree: ast.Module, steps: list[int], backs: list[int]) -> str:
    """A caveat for the scaler's line where a branch runs after the backward instead of the step
    (``if args.use_optimizer: opt.step()`` / ``else:`` a hand-written update): the edit holds for
    the measured path, and that branch would see gradients still multiplied by the scale."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.If) or not node.orelse:
            continue
        start, end = node.lineno, node.end_lineno or node.lineno
        if any(start <= b <= end for b in backs):
            continue  # the backward is inside too: each branch is a whole step of its own
        body = (node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
        other = (node.orelse[0].lineno, node.orelse[-1].end_lineno or node.orelse[-1].lineno)
        in_body, in_other = (any(a <= s <= b for s in steps) for a, b in (body, other))
        if in_body != in_other:
            test = ast.unparse(node.test)
            test = test if len(test) <= 40 else test[:37] + "..."
            where = "the else branch of" if in_body else "the body of"
            return (f"; measured where the optimizer steps: {where} `if {test}:` takes no step, and would "
                    "update from scaled gradients")
    return ""


def _receiver(tree: ast.Module, lines: list[str], line: int, method: str) -> str:
    """The text of the object whose ``method`` is called at ``line`` (``opt`` of ``opt.step()``)."""
    call = _call_at(tree, line, method)
    if not isinstance(call.func, ast.Attribute):
        raise NotMechanical(f"line {line} does not call .{method}() on an object")
    return _segment(lines, call.func.value)


# -- applying -----------------------------------------------------------------------------------

def scale(text: str, line: int, name: str) -> str:
    """``loss.backward()`` at ``line`` as ``name.scale(loss).backward()``."""
    call = _call_at(ast.parse(text), line, "backward")
    lines = text.splitlines(True)
    if not isinstance(call.func, ast.Attribute) or _segment(lines, call.func.value).endswith("autograd"):
        raise NotMechanical(f"the backward at line {line} is not a tensor's .backward(): pitstop scales "
                            "loss.backward()")
    return _replace(lines, call.func.value, f"{name}.scale({_segment(lines, call.func.value)})")


def step(text: str, line: int, name: str) -> str:
    """``optimizer.step()`` at ``line`` as ``name.step(optimizer)``."""
    tree, lines = ast.parse(text), text.splitlines(True)
    call = _call_at(tree, line, "step")
    if call.args or call.keywords:
        raise NotMechanical(f"the step at line {line} takes arguments: GradScaler.step(optimizer) passes none")
    return _replace(lines, call, f"{name}.step({_receiver(tree, lines, line, 'step')})")


def beside(text: str, line: int, new: str, after: bool) -> str:
    """``new`` on a line of its own right before (or after) the simple statement at ``line``."""
    tree, lines = ast.parse(text), text.splitlines(True)
    stmts = [s for s in ast.walk(tree) if isinstance(s, ast.stmt) and not hasattr(s, "body")
             and s.lineno <= line <= (s.end_lineno or s.lineno)]
    if not stmts:
        raise NotMechanical(f"no statement at line {line}")
    stmt = max(stmts, key=lambda s: (s.lineno, s.col_offset))
    head = lines[stmt.lineno - 1]
    if head[:stmt.col_offset].strip():
        raise NotMechanical(f"line {stmt.lineno} holds its statement beside other code: put it on a line of its own")
    at = (stmt.end_lineno or stmt.lineno) if after else stmt.lineno - 1
    return "".join([*lines[:at], f"{_indent(head)}{new}\n", *lines[at:]])
