"""A model whose variants break in different ways, so that one bench run meets every fault class.

Every worker first computes the eval+no_grad reference with the run's thread count (1), so only
what that reference never sees may misbehave: train mode, grad mode, inference_mode, 2 threads."""

import os
import signal
import time

import torch
from torch import nn


class Faulty(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 4)

    def forward(self, x):
        if torch.is_inference_mode_enabled():  # eval+inference_mode
            raise RuntimeError("sabotaged under inference_mode")
        if self.training:  # train+grad: what the kernel's out-of-memory killer does
            os.kill(os.getpid(), signal.SIGKILL)
        if torch.is_grad_enabled():  # eval+grad
            os.kill(os.getpid(), signal.SIGSEGV)
        if torch.get_num_threads() == 2:  # eval+no_grad+threads2
            time.sleep(3600)
        return self.lin(x)  # eval+no_grad: the one variant that runs


def faulty():
    return Faulty(), torch.randn(2, 16)
