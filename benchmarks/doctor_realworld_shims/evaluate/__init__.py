"""A stand-in for Hugging Face `evaluate`: `load("glue", "mrpc")` without downloading the metric script.

The GLUE/MRPC metric is accuracy and F1 of the positive class, computed here from the predictions and
references the script passes (`add_batch`, then `compute`); tensors are read the way `evaluate` reads
them (`.detach().cpu().numpy()`). No training code is replaced."""

from __future__ import annotations

from typing import Any


def _ints(values: Any) -> list[int]:
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return [int(v) for v in values]


class _GlueMrpc:
    def __init__(self) -> None:
        self.predictions: list[int] = []
        self.references: list[int] = []

    def add_batch(self, predictions: Any = None, references: Any = None) -> None:
        self.predictions += _ints(predictions)
        self.references += _ints(references)

    def compute(self, predictions: Any = None, references: Any = None) -> dict[str, float]:
        if predictions is not None:
            self.add_batch(predictions, references)
        pairs = list(zip(self.predictions, self.references, strict=True))
        self.predictions, self.references = [], []
        tp = sum(p == r == 1 for p, r in pairs)
        fp = sum(p == 1 and r == 0 for p, r in pairs)
        fn = sum(p == 0 and r == 1 for p, r in pairs)
        accuracy = sum(p == r for p, r in pairs) / len(pairs) if pairs else 0.0
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        return {"accuracy": accuracy, "f1": f1}


def load(path: str, config_name: str | None = None, **_: Any) -> _GlueMrpc:
    """The GLUE/MRPC metric only; anything else raises, as a missing download would."""
    if (path, config_name) != ("glue", "mrpc"):
        raise FileNotFoundError(f"evaluate stand-in: only load('glue', 'mrpc') is here, got {path!r}, {config_name!r}")
    return _GlueMrpc()
