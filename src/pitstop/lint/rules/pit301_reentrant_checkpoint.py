"""PIT301 reentrant-checkpoint."""

from __future__ import annotations

from typing import ClassVar

from pitstop.lint.rules.base import Context, Rule, is_const, keyword

_CHECKPOINTS = ("torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential")


class ReentrantCheckpoint(Rule):
    """What it does:
        Finds `torch.utils.checkpoint.checkpoint(...)` and `checkpoint_sequential(...)` called
        without `use_reentrant=False` (or with `use_reentrant=True`).

    Why is this bad:
        The reentrant implementation is deprecated: it ignores inputs that do not require grad
        (their gradients silently come back as None) and does not support `torch.autograd.grad`.

    Example:
        y = checkpoint(block, x)

    Use instead:
        y = checkpoint(block, x, use_reentrant=False)
    """

    code = "PIT301"
    name = "reentrant-checkpoint"
    message = "{fn}() without use_reentrant=False (the reentrant variant is deprecated and mishandles inputs " \
              "without grad)"
    variants: ClassVar[dict[str, str]] = {"true": "{fn}(use_reentrant=True): use the non-reentrant variant"}
    fix = "safe"

    def check(self, ctx: Context) -> None:
        for call in ctx.mod.calls:
            q = ctx.mod.qualname(call.func) or ""
            if q not in _CHECKPOINTS:
                continue
            fn = q.rsplit(".", 1)[-1]
            kw = keyword(call, "use_reentrant")
            if kw is None:
                if any(k.arg is None for k in call.keywords):
                    continue  # **kwargs may carry it
                fix = self.make_fix("add use_reentrant=False", ctx.keyword_edit(call, "use_reentrant=False"))
                self.report(ctx, call, fix, fn=fn)
            elif is_const(kw.value, True):
                self.report(ctx, call, variant="true", fn=fn)
