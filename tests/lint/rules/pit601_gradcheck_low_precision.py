import torch
from torch.autograd import gradcheck, gradgradcheck


def check(fn):
    x = torch.randn(4, requires_grad=True)
    gradcheck(fn, (x,))  # error: PIT601
    gradgradcheck(fn, (torch.rand(3, requires_grad=True),))  # error: PIT601
    y = torch.randn(4, dtype=torch.float64, requires_grad=True)
    gradcheck(fn, (y,))
    z = torch.randn(4).double().requires_grad_()
    gradcheck(fn, (z,))


def make_input(array):
    return torch.from_numpy(array).requires_grad_()


def check_through_a_helper(fn):
    import numpy as np

    data = np.random.randn(3, 3).astype(np.float32)
    gradcheck(fn, (make_input(data),))  # error: PIT601
    wide = np.random.randn(3, 3)  # numpy's default is float64
    gradcheck(fn, (make_input(wide),))


def check_a_tuple_built_above(fn):
    inputs = (torch.randn(4, dtype=torch.float, requires_grad=True),)
    gradcheck(fn, inputs)  # error: PIT601


def check_an_unknown_dtype(fn, dtype):
    gradcheck(fn, (torch.randn(4, dtype=dtype, requires_grad=True),))
