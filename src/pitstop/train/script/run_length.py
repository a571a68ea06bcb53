"""How many optimizer steps the script plans to run, read in the discovery run (paused after a few
steps, its frames live): a one-time cost (compilation, a loader's worker start-up) is only worth
paying when the run is long enough to pay it back.

Where it is read, in order: Lightning's ``Trainer.estimated_stepping_batches`` (``max_steps``, or
``max_epochs`` x the batches, gradient accumulation counted); the HF Trainer's ``state.max_steps``;
else the loops around the script's ``optimizer.step()`` in every user frame on the stack, each
``for`` over a ``range(...)``, a sized object (a DataLoader: its batches) or ``enumerate``/``tqdm``
of one, their counts multiplied. A ``while`` loop, a loop that can ``break`` or an iterable whose
length is unknown leaves the length unknown, with the reason. Bounds are evaluated from the frame's
variables with a small set of side-effect-free operations: nothing of the script is called but
``len`` and ``int``."""

from __future__ import annotations

import ast
import math
import operator
import sys
from pathlib import Path
from types import FrameType
from typing import Any

SAFE_CALLS: dict[str, Any] = {"len": len, "int": int, "min": min, "max": max, "round": round, "abs": abs}
WRAPPERS = ("enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "progress_bar", "iter")  # count of their 1st arg
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Div: operator.truediv, ast.Mod: operator.mod}


class Unknown(Exception):
    """The run length cannot be read; the message says why."""


def run_length(probe: Any, watch: Any) -> dict[str, Any]:
    """``{"steps": N or None, "source": where it was read, or why it could not be}``."""
    for kind, ref in reversed(getattr(watch, "instances", [])):
        obj = ref()
        if obj is None:
            continue
        if kind == "lightning":
            try:
                steps = obj.estimated_stepping_batches
            except Exception:
                continue
            if isinstance(steps, int | float) and math.isfinite(steps) and steps > 0:
                return {"steps": int(steps), "source": "Lightning's Trainer.estimated_stepping_batches (max_steps, "
                                                       "or max_epochs x the batches of an epoch)"}
        if kind == "hf-trainer":
            steps = getattr(getattr(obj, "state", None), "max_steps", 0)
            if isinstance(steps, int) and steps > 0:
                return {"steps": steps, "source": "the HF Trainer's state.max_steps (max_steps, or num_train_epochs "
                                                  "x the batches of an epoch)"}
    try:
        return loop_bound(_user_frames(), getattr(probe, "backwards_per_step", 1))
    except Unknown as exc:
        return {"steps": None, "source": str(exc)}


def _user_frames() -> list[FrameType]:
    from pitstop.train.script.frames import user_frames

    return user_frames(sys._getframe(1))


def loop_bound(frames: list[FrameType], per_step: int = 1) -> dict[str, Any]:
    """The product of the counts of the loops around each frame's current line (outermost first),
    divided by the iterations per optimizer step (``per_step``: backward calls per step, gradient
    accumulation)."""
    total, parts = 1, []
    for frame in frames:
        for loop in _loops_around(frame):
            count = _count(loop, frame)
            total *= count
            parts.append(f"{Path(frame.f_code.co_filename).name}:{loop.lineno} `{_header(loop)}` ({count:,})")
    if not parts:
        raise Unknown("no loop around the optimizer step was found in the script's own frames")
    steps = total // max(per_step, 1)
    accumulation = f", {per_step} backward passes per step" if per_step > 1 else ""
    return {"steps": steps, "source": f"the loop bounds: {' x '.join(parts)}{accumulation}"}


def _loops_around(frame: FrameType) -> list[ast.For | ast.While]:
    """The loops of ``frame``'s function that hold its current line, outermost first."""
    try:
        tree = ast.parse(Path(frame.f_code.co_filename).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError) as exc:
        raise Unknown(f"{frame.f_code.co_filename} could not be read ({type(exc).__name__})") from None
    line, first = frame.f_lineno, frame.f_code.co_firstlineno
    body: list[ast.stmt] = tree.body
    if frame.f_code.co_name != "<module>":
        func = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                     and (n.decorator_list[0].lineno if n.decorator_list else n.lineno) == first), None)
        if func is None:
            raise Unknown(f"the function {frame.f_code.co_name} was not found in {frame.f_code.co_filename}")
        body = func.body
    loops: list[ast.For | ast.While] = []
    while True:
        stmt = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if stmt is None or isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return loops
        if isinstance(stmt, ast.For | ast.While | ast.AsyncFor):
            loops.append(stmt)  # type: ignore[arg-type]
        body = [s for block in _blocks(stmt) for s in block]


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    blocks = [getattr(stmt, name) for name in ("body", "orelse", "finalbody") if getattr(stmt, name, None)]
    blocks += [h.body for h in getattr(stmt, "handlers", [])]
    blocks += [c.body for c in getattr(stmt, "cases", [])]
    return blocks


def _header(loop: ast.stmt) -> str:
    if isinstance(loop, ast.While):
        return f"while {ast.unparse(loop.test)}"
    assert isinstance(loop, ast.For | ast.AsyncFor)
    return f"for {ast.unparse(loop.target)} in {ast.unparse(loop.iter)}"


def _count(loop: ast.stmt, frame: FrameType) -> int:
    where = f"line {loop.lineno} `{_header(loop)}`"
    if not isinstance(loop, ast.For | ast.AsyncFor):
        raise Unknown(f"the loop at {where} has no bound pitstop can read")
    if _breaks(loop):
        raise Unknown(f"the loop at {where} can end early (a break)")
    try:
        return _length(loop.iter, frame)
    except Unknown as exc:
        raise Unknown(f"the length of the loop at {where} is unknown: {exc}") from None


def _breaks(loop: ast.For | ast.AsyncFor) -> bool:
    """A ``break`` of this loop (not of a loop nested in it)."""
    todo: list[ast.AST] = list(loop.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Break):
            return True
        if not isinstance(node, ast.For | ast.AsyncFor | ast.While | ast.FunctionDef | ast.AsyncFunctionDef
                          | ast.ClassDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _length(node: ast.expr, frame: FrameType) -> int:
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        if name == "range":
            bounds = [_value(a, frame) for a in node.args]
            if not bounds or not all(isinstance(b, int) for b in bounds):
                raise Unknown(f"range({', '.join(map(repr, bounds))})")
            return len(range(*bounds))
        if name in ("trange", "tqdm.trange"):
            return len(range(*[int(_value(a, frame)) for a in node.args]))
        if (name in WRAPPERS or name.endswith(".tqdm")) and node.args:
            return _length(node.args[0], frame)
        if name == "zip" and node.args:
            return min(_length(a, frame) for a in node.args)
        raise Unknown(f"{name}(...) is not a range or a sized object")
    value = _value(node, frame)
    if isinstance(value, int) and not isinstance(value, bool):
        raise Unknown(f"{ast.unparse(node)} is a number, not an iterable")
    try:
        return len(value)
    except TypeError:
        raise Unknown(f"{ast.unparse(node)} ({type(value).__name__}) has no length") from None


def _value(node: ast.expr, frame: FrameType) -> Any:
    """``node`` evaluated from ``frame``'s variables: names, attributes, constants, arithmetic,
    subscripts by constants and the calls in ``SAFE_CALLS``; anything else is unknown."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, SAFE_CALLS):
            if node.id in scope:
                return scope[node.id]
        raise Unknown(f"{node.id} is not defined")
    if isinstance(node, ast.Attribute):
        base = _value(node.value, frame)
        if isinstance(base, type(sys)) or not callable(getattr(type(base), node.attr, None)) \
                or isinstance(getattr(type(base), node.attr, None), property):
            try:
                return getattr(base, node.attr)
            except Exception as exc:
                raise Unknown(f"{ast.unparse(node)}: {type(exc).__name__}") from None
        raise Unknown(f"{ast.unparse(node)} is a method")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_value(node.left, frame), _value(node.right, frame))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand, frame)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        try:
            return _value(node.value, frame)[node.slice.value]
        except (LookupError, TypeError) as exc:
            raise Unknown(f"{ast.unparse(node)}: {type(exc).__name__}") from None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SAFE_CALLS \
            and not node.keywords:
        args = [_value(a, frame) for a in node.args]
        try:
            return SAFE_CALLS[node.func.id](*args)
        except (TypeError, ValueError) as exc:
            raise Unknown(f"{ast.unparse(node)}: {type(exc).__name__}") from None
    raise Unknown(f"`{ast.unparse(node)}` is not read (only names, numbers and arithmetic are)")
