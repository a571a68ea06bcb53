"""The names of ``pitstop train``'s techniques, in a module of their own: the command line reads them
to build its help without importing what measures them (numpy, the worker settings)."""

from __future__ import annotations

# the techniques (axes of a training variant), listed once: what a search may vary, and what each kind
# of run varies unless told (``--techniques``, the API's ``techniques=``). A script's micro-batches and
# checkpointing are not edited into it; a model spec has no DataLoader and no DDP job
TECHNIQUES = ("precision", "compile", "optimizer", "zero_grad", "layout", "threads", "micro_batch", "checkpoint", "ddp",
              "workers", "cache", "tf32", "cudnn_benchmark")
MODEL_TECHNIQUES = ("precision", "tf32", "cudnn_benchmark", "compile", "optimizer", "zero_grad", "layout", "threads",
                    "micro_batch", "checkpoint")
SCRIPT_TECHNIQUES = ("workers", "cache", "precision", "tf32", "cudnn_benchmark", "compile", "optimizer", "zero_grad",
                     "layout", "threads", "ddp")
