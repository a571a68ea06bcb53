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
