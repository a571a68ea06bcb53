"""The run-time (R) checks of ``pitstop.codes``, one file per code, each holding the state it owns."""

from __future__ import annotations

from pitstop.doctor.check import Check
from pitstop.doctor.checks.pit101_stale_gradients import StaleGradients
from pitstop.doctor.checks.pit102_graph_kept_alive import GraphTracker
from pitstop.doctor.checks.pit103_retain_graph_in_loop import RetainGraph
from pitstop.doctor.checks.pit104_training_without_grad import TrainingWithoutGrad
from pitstop.doctor.checks.pit105_parameter_not_learning import ParameterNotLearning
from pitstop.doctor.checks.pit106_non_finite import NonFinite
from pitstop.doctor.checks.pit107_gradient_norm_anomaly import GradNormAnomaly
from pitstop.doctor.checks.pit108_dead_activations import DeadActivations
from pitstop.doctor.checks.pit109_wrong_module_mode import WrongModuleMode
from pitstop.doctor.checks.pit110_non_scalar_backward import NonScalarBackward
from pitstop.doctor.checks.pit402_input_stall import InputStall

CHECKS: tuple[type[Check], ...] = (StaleGradients, GraphTracker, RetainGraph, TrainingWithoutGrad,
                                   ParameterNotLearning, NonFinite, GradNormAnomaly, DeadActivations,
                                   WrongModuleMode, NonScalarBackward, InputStall)

__all__ = ["CHECKS", "DeadActivations", "GradNormAnomaly", "GraphTracker", "InputStall", "NonFinite",
           "NonScalarBackward", "ParameterNotLearning", "RetainGraph", "StaleGradients", "TrainingWithoutGrad",
           "WrongModuleMode", "default_checks"]


def default_checks() -> list[Check]:
    """One instance of every run-time check."""
    return [cls() for cls in CHECKS]
