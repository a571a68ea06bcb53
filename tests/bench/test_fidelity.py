from dataclasses import dataclass

import pytest
import torch

from pitstop.bench.fidelity import compare, flatten, within


@dataclass
class Output:
    logits: torch.Tensor
    hidden: tuple


def test_flatten_handles_nesting_in_order():
    a, b, c = torch.zeros(1), torch.ones(1), torch.full((1,), 2.0)
    nested = {"x": a, "y": (b, [c, "text", None])}
    assert [t.item() for t in flatten(nested)] == [0.0, 1.0, 2.0]
    assert [t.item() for t in flatten(Output(a, (b, c)))] == [0.0, 1.0, 2.0]


def test_identical_outputs_have_zero_error_and_full_agreement():
    x = torch.randn(8, 10)
    result = compare([x.clone()], [x])
    assert result == {"max_abs_err": 0.0, "rel_err": 0.0, "agreement": 1.0}


def test_errors_are_measured():
    ref = torch.ones(4, 3)
    cand = ref.clone()
    cand[0, 0] = 1.5
    result = compare([cand], [ref])
    assert result["max_abs_err"] == pytest.approx(0.5)
    assert result["rel_err"] == pytest.approx(0.5 / (12**0.5))
    assert not within(result, 1e-4) and within(result, 0.2)


def test_argmax_agreement_counts_flipped_rows():
    ref = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    cand = ref.clone()
    cand[0] = torch.tensor([0.0, 1.0])
    assert compare([cand], [ref])["agreement"] == 0.75


def test_shape_and_structure_mismatch_are_errors():
    assert "shape" in compare([torch.zeros(2)], [torch.zeros(3)])["error"]
    assert "tensors" in compare([torch.zeros(2)], [torch.zeros(2), torch.zeros(2)])["error"]
    assert not within(compare([torch.zeros(2)], [torch.zeros(3)]), 1.0)


def test_nan_where_reference_is_finite_is_infinite_error():
    assert compare([torch.tensor([float("nan"), 1.0])], [torch.tensor([0.0, 1.0])])["rel_err"] == float("inf")
