"""PIT401 loader-in-main-process."""

from __future__ import annotations

import ast

from pitstop.lint.rules.base import Context, Rule, is_const, keyword

_LOADERS = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")


class LoaderInMainProcess(Rule):
    """What it does:
        Finds a training `DataLoader` (shuffled, with a sampler, or over a dataset named like
        training data) left at `num_workers=0`; with CUDA in use, also without `pin_memory=True`.

    Why is this bad:
        With no workers every batch is loaded and collated in the training process while the model
        waits; unpinned host memory makes each copy to the GPU slower and synchronous.

    Example:
        DataLoader(ds, batch_size=32, shuffle=True)

    Use instead:
        DataLoader(ds, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
    """

    code = "PIT401"
    name = "loader-in-main-process"
    message = "training DataLoader loads batches in the main process (num_workers=0){extra}; measure settings " \
              "with `pitstop data`"

    def check(self, ctx: Context) -> None:
        mod = ctx.mod
        cuda = "cuda" in mod.source
        for call in mod.calls:
            if (mod.qualname(call.func) or "") not in _LOADERS or any(k.arg is None for k in call.keywords):
                continue
            if not self.training(ctx, call):
                continue
            workers = keyword(call, "num_workers")
            if workers is None or (isinstance(workers.value, ast.Constant) and workers.value.value == 0):
                pin = keyword(call, "pin_memory")
                extra = " and no pin_memory=True although CUDA is used" if cuda and (
                    pin is None or is_const(pin.value, False)) else ""
                self.report(ctx, call, extra=extra)

    def training(self, ctx: Context, call: ast.Call) -> bool:
        shuffle = keyword(call, "shuffle")
        return (shuffle is not None and not is_const(shuffle.value, False)) or keyword(call, "sampler") is not None \
            or "train" in ctx.text(call.args[0] if call.args else call).lower()
