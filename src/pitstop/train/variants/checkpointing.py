"""Activation checkpointing of the blocks ``pitstop memory``'s budget plan chose
(``pitstop.memory.checkpoint``): their activations are recomputed in backward instead of kept,
which costs time and saves memory; it is tried only under a memory budget, where it can let a
larger micro-batch fit. The recipe wraps the blocks with ``torch.utils.checkpoint`` itself."""

from __future__ import annotations

from pitstop.train.config import TrainConfig
from pitstop.train.variants.base import Code, Technique, TrainTarget

HELPER = '''
def checkpoint_block(module):
    """Recompute `module`'s activations in backward instead of keeping them."""
    forward = module.forward

    def checkpointed(*args, **kwargs):
        if not torch.is_grad_enabled():
            return forward(*args, **kwargs)
        return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)

    module.forward = checkpointed
'''


class Checkpointing(Technique):
    axis = "checkpoint"

    def gate(self, config: TrainConfig, target: TrainTarget) -> str | None:
        if config.checkpoint and config.compile:
            return "checkpointed blocks are not compiled here; try compile without checkpointing"
        return None

    def code(self, config: TrainConfig, target: TrainTarget) -> Code:
        if not config.checkpoint:
            return Code()
        return Code(imports=["import torch.utils.checkpoint"], helpers=[HELPER],
                    setup=[f"for name in {list(config.checkpoint)!r}:",
                           "    checkpoint_block(model.get_submodule(name))"],
                    details={"checkpointed_blocks": list(config.checkpoint)})
