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
    assert result["max_abs_err"] == 0.0 and result["rel_err"] == 0.0
    assert result["agreement"] == result["agreement_margin"] == 1.0 and result["samples"] == 8


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


def test_a_flip_between_near_tied_logits_is_excused_and_a_clear_flip_is_not():
    torch.manual_seed(0)
    ref = torch.randn(128, 10) * 3
    ref[0, :2] = torch.tensor([5.0, 4.999])  # a near tie at row 0
    ref[0, 2:] = 0.0
    cand = ref + 1e-3 * torch.randn_like(ref)  # a small error everywhere...
    cand[0, :2] = torch.tensor([4.999, 5.0])  # ...which flips the near tie
    near = compare([cand], [ref])
    assert near["agreement"] == pytest.approx(127 / 128) and near["agreement_margin"] == 1.0
    assert near["near_tie_flips"] == 1 and within(near, 2e-2, 0.99)
    ref[1], cand[1] = torch.zeros(10), torch.zeros(10)
    ref[1, 1], cand[1, 0] = 3.0, 3.0  # a clear flip: the margin (3) far exceeds the error scale
    clear = compare([cand], [ref])
    assert clear["flips"] == 2 and clear["near_tie_flips"] == 1
    assert clear["agreement_margin"] == pytest.approx(127 / 128)


def test_fidelity_batches_have_the_timing_shape_and_fresh_samples():
    from pitstop.bench.fidelity import batches
    from pitstop.models.inputs import Inputs, parse_input_spec

    timing = Inputs((torch.randn(8, 16), torch.randint(0, 50, (8, 4))))
    drawn = batches(timing, 128, 0)
    assert len(drawn) == 16 and drawn[0] is timing
    assert all(b.args[0].shape == (8, 16) and b.args[1].shape == (8, 4) for b in drawn)
    assert not torch.equal(drawn[1].args[0], timing.args[0])
    assert all(int(b.args[1].min()) >= 0 and int(b.args[1].max()) < 50 for b in drawn)
    spec = batches(timing, 64, 0, parse_input_spec("float32[B,16];int64[B,4]{0,9}"))
    assert len(spec) == 8 and int(spec[3].args[1].max()) < 9
    own = batches(timing, 64, 0, own=Inputs((torch.randn(20, 16), torch.zeros(20, 4, dtype=torch.long))))
    assert len(own) == 3 and own[2].args[0].shape == (8, 16)  # the timing batch, then the user's 20 rows: 2 x 8
