"""Model and input specs, and the built-in zoo."""

from pitstop.models.inputs import Inputs, InputSpec, TensorSpec, parse_input_spec
from pitstop.models.spec import ModelSpec, parse_model_spec
from pitstop.models.zoo import ZOO

__all__ = ["ZOO", "InputSpec", "Inputs", "ModelSpec", "TensorSpec", "parse_input_spec", "parse_model_spec"]
