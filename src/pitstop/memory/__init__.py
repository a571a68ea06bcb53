"""Activation memory per module, measured exactly, and gradient checkpointing chosen to meet a
memory budget, with the time it costs measured.

    report = pitstop.memory.activation_report(model, example_inputs)
    plan = pitstop.memory.checkpoint(model, example_inputs, budget=0.5)   # wraps in place
"""

from __future__ import annotations

from pitstop.memory.accounting import ActivationReport, ModuleRow, activation_report, peak_step_bytes
from pitstop.memory.checkpointing import CheckpointPlan, checkpoint, uncheckpoint

__all__ = ["ActivationReport", "CheckpointPlan", "ModuleRow", "activation_report", "checkpoint", "peak_step_bytes",
           "uncheckpoint"]
