"""The static (S) rules of the catalogue, one class per code, one file per code. ``RULES`` holds one
instance of each, in code order; ``BY_CODE`` finds a rule by its code."""

from __future__ import annotations

from pitstop.lint.rules.base import Context, Diagnostic, Edit, Fix, Rule
from pitstop.lint.rules.pit001_invalid_file import InvalidFile
from pitstop.lint.rules.pit101_stale_gradients import StaleGradients
from pitstop.lint.rules.pit102_graph_kept_alive import GraphKeptAlive
from pitstop.lint.rules.pit103_retain_graph_in_loop import RetainGraphInLoop
from pitstop.lint.rules.pit104_training_without_grad import TrainingWithoutGrad
from pitstop.lint.rules.pit109_wrong_module_mode import WrongModuleMode
from pitstop.lint.rules.pit201_inference_with_grad import InferenceWithGrad
from pitstop.lint.rules.pit202_prefer_inference_mode import PreferInferenceMode
from pitstop.lint.rules.pit301_reentrant_checkpoint import ReentrantCheckpoint
from pitstop.lint.rules.pit401_loader_in_main_process import LoaderInMainProcess
from pitstop.lint.rules.pit501_unsafe_load import UnsafeLoad
from pitstop.lint.rules.pit601_gradcheck_low_precision import GradcheckLowPrecision
from pitstop.lint.rules.pit602_unstable_logsumexp import UnstableLogsumexp

INVALID_FILE = InvalidFile()
RULES: tuple[Rule, ...] = (INVALID_FILE, StaleGradients(), GraphKeptAlive(), RetainGraphInLoop(), TrainingWithoutGrad(),
                           WrongModuleMode(), InferenceWithGrad(), PreferInferenceMode(), ReentrantCheckpoint(),
                           LoaderInMainProcess(), UnsafeLoad(), GradcheckLowPrecision(), UnstableLogsumexp())
BY_CODE: dict[str, Rule] = {r.code: r for r in RULES}

__all__ = ["BY_CODE", "INVALID_FILE", "RULES", "Context", "Diagnostic", "Edit", "Fix", "Rule"]
