"""PIT501 unsafe-load."""

from __future__ import annotations

import ast
from typing import ClassVar

from pitstop.lint.analysis import Module
from pitstop.lint.rules.base import Context, Rule, is_const, keyword

SAFE_DEFAULT = (2, 6)  # torch.load defaults to weights_only=True from torch 2.6 on


class UnsafeLoad(Rule):
    """What it does:
        Finds `torch.load(...)` without `weights_only=` where the project allows torch older than
        2.6 (read from its pyproject.toml, setup.cfg, setup.py or requirements*.txt; where it says
        nothing the finding is only `info`), and `weights_only=False` on a path the project does
        not write itself with `torch.save`. Loads inside `torch.serialization.safe_globals(...)`
        are left alone.

    Why is this bad:
        Without weights_only, torch.load unpickles the file: a checkpoint from someone else can run
        arbitrary code on the machine that loads it.

    Example:
        state = torch.load(path)

    Use instead:
        state = torch.load(path, weights_only=True)
    """

    code = "PIT501"
    name = "unsafe-load"
    message = "torch.load() without weights_only=True: loading a checkpoint can run arbitrary code"
    variants: ClassVar[dict[str, str]] = {
        "false": "torch.load(weights_only=False) runs arbitrary code from the file; load weights with "
                 "weights_only=True (or allow-list types with torch.serialization.add_safe_globals)",
    }
    fix = "unsafe"  # a checkpoint holding arbitrary objects then fails to load

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        low = ctx.project.torch_min if ctx.project is not None else None
        saved = None
        for call in mod.calls:
            if mod.qualname(call.func) != "torch.load" or _under_safe_globals(mod, call):
                continue
            kw = keyword(call, "weights_only")
            if kw is None and not any(k.arg is None for k in call.keywords):
                if low is not None and low >= SAFE_DEFAULT:
                    continue  # the default is already weights_only=True on every torch the project allows
                self.report(ctx, call, self.make_fix("add weights_only=True",
                                                     ctx.keyword_edit(call, "weights_only=True")),
                            severity=None if low is not None else "info")
            elif kw is not None and is_const(kw.value, False):
                saved = _saved_paths(mod) if saved is None else saved
                if not (call.args and ast.unparse(call.args[0]) in saved):
                    self.report(ctx, call, variant="false")


def _under_safe_globals(mod: Module, node: ast.AST) -> bool:
    cur = mod.parents.get(id(node))
    while cur is not None:
        if isinstance(cur, (ast.With, ast.AsyncWith)) and any(
                (mod.qualname(i.context_expr.func if isinstance(i.context_expr, ast.Call) else i.context_expr) or "")
                == "torch.serialization.safe_globals" for i in cur.items):
            return True
        cur = mod.parents.get(id(cur))
    return False


def _saved_paths(mod: Module) -> set[str]:
    """The path expressions the file passes to torch.save: its own output."""
    return {ast.unparse(c.args[1]) for c in mod.calls if mod.qualname(c.func) == "torch.save" and len(c.args) > 1}
