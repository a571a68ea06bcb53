import pytest
import torch

from pitstop.errors import InputSpecError
from pitstop.models.inputs import Inputs, parse_input_spec


def test_parses_batch_dims_ranges_and_several_inputs():
    spec = parse_input_spec("float32[B,3,224,224]; int64[B,128]{0,30522}")
    image, tokens = spec.make(batch_size=2, seed=0).args
    assert image.shape == (2, 3, 224, 224) and image.dtype == torch.float32
    assert tokens.shape == (2, 128) and tokens.dtype == torch.int64
    assert 0 <= int(tokens.min()) and int(tokens.max()) < 30522
    assert str(spec) == "float32[B,3,224,224];int64[B,128]{0,30522}"


def test_same_seed_same_inputs_other_seed_other_inputs():
    spec = parse_input_spec("float32[B,8]")
    assert torch.equal(spec.make(4, seed=1).args[0], spec.make(4, seed=1).args[0])
    assert not torch.equal(spec.make(4, seed=1).args[0], spec.make(4, seed=2).args[0])


def test_integer_range_is_respected():
    (t,) = parse_input_spec("int32[B,1000]{5,7}").make(3).args
    assert set(t.unique().tolist()) <= {5, 6}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("flot32[B,3]", "expected a dtype like float32 or int64, got 'flot32'"),
        ("float32(B,3)", "cannot parse"),
        ("float32[B,x]", "dimension 'x'"),
        ("float32[]", "no dimensions"),
        ("int64[B,4]{9,3}", "empty"),
        ("int64[B,4]{a,b}", "two integers"),
        ("float32[B,4]{0,1}", "integer dtypes"),
        ("  ", "empty spec"),
    ],
)
def test_bad_specs_name_the_problem(text, needle):
    with pytest.raises(InputSpecError, match=r"^input: ") as info:  # the field: the CLI says --input
        parse_input_spec(text)
    assert needle in str(info.value) and info.value.field == "input"
    assert "\n" not in str(info.value)


def test_inputs_coerce_and_resize_batch():
    x = torch.arange(6.0).reshape(3, 2)
    inputs = Inputs.coerce(x)
    assert inputs.batch_size() == 3
    bigger = inputs.with_batch_size(5).args[0]
    assert bigger.shape == (5, 2) and torch.equal(bigger[3:], x[:2])
    assert inputs.with_batch_size(2).args[0].shape == (2, 2)
    kw = Inputs.coerce({"input_ids": torch.zeros(2, 4, dtype=torch.long)})
    assert kw.kwargs["input_ids"].shape == (2, 4) and kw.describe() == "input_ids=int64[2,4]"


def test_inputs_without_shared_batch_dim_cannot_be_resized():
    inputs = Inputs.coerce((torch.zeros(2, 3), torch.zeros(5, 3)))
    with pytest.raises(InputSpecError, match="batch size"):
        inputs.with_batch_size(4)


def test_coerce_rejects_non_tensors():
    with pytest.raises(InputSpecError, match="example inputs must be"):
        Inputs.coerce(3.5)
