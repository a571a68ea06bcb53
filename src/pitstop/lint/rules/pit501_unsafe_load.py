"""PIT501 unsafe-load."""

from __future__ import annotations

from typing import ClassVar

from pitstop.lint.rules.base import Context, Rule, is_const, keyword


class UnsafeLoad(Rule):
    """What it does:
        Finds `torch.load(...)` without `weights_only=True`, or with `weights_only=False`.

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
        for call in ctx.mod.calls:
            if ctx.mod.qualname(call.func) != "torch.load":
                continue
            kw = keyword(call, "weights_only")
            if kw is None and not any(k.arg is None for k in call.keywords):
                self.report(ctx, call, self.make_fix("add weights_only=True",
                                                     ctx.keyword_edit(call, "weights_only=True")))
            elif kw is not None and is_const(kw.value, False):
                self.report(ctx, call, variant="false")
