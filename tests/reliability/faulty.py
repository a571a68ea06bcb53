"""Small real models and datasets that misbehave on purpose, loaded through file specs
(``tests/reliability/faulty.py:NAME``) by the reliability tests and benchmarks/fault_injection.py."""

import os
import signal
import time

import torch
from torch import nn
from torch.utils.data import Dataset


def build():
    """A well-behaved 8-feature model (the "good" result comes from it)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


class _Faulty(nn.Module):
    """Fine in train mode with autograd; misbehaves in its first forward (eval, no_grad)."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how, self.net = how, nn.Linear(8, 4)

    def forward(self, x):
        if not self.training and not torch.is_grad_enabled():
            if self.how == "exit":
                os._exit(7)
            if self.how == "hang":
                time.sleep(3600)
        return self.net(x)


def exits_in_eval():
    return _Faulty("exit")


def hangs_under_no_grad():
    return _Faulty("hang")


class _OneVariant(nn.Module):
    """Misbehaves only under inference_mode: one grad-mode variant is hit, the others run."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how, self.net = how, nn.Linear(8, 4)

    def forward(self, x):
        if torch.is_inference_mode_enabled():
            if self.how == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            if self.how == "oom-kill":  # what the kernel's out-of-memory killer sends
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "hang":
                time.sleep(3600)
        return self.net(x)


def crash_in_one_variant():
    return _OneVariant("crash")


def hang_in_one_variant():
    return _OneVariant("hang")


def oom_kill_in_one_variant():
    return _OneVariant("oom-kill")


class _OneThread(nn.Module):
    """Misbehaves only when torch computes on one thread: optimize's ``threads1`` candidate is hit,
    the start point (at the run's thread count, 2 or more) and the fidelity reference run."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how, self.net = how, nn.Linear(8, 4)

    def forward(self, x):
        if torch.get_num_threads() == 1:
            if self.how == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            if self.how == "oom-kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "hang":
                time.sleep(3600)
        return self.net(x)


def crash_at_one_thread():
    return _OneThread("crash")


def hang_at_one_thread():
    return _OneThread("hang")


def oom_kill_at_one_thread():
    return _OneThread("oom-kill")


class ThreadRecorder(nn.Module):
    """Records ``torch.get_num_threads()`` at every call (to see which thread count the reference used)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(8, 4)
        self.threads: list[int] = []

    def forward(self, x):
        self.threads.append(torch.get_num_threads())
        return self.net(x)


class Rows(Dataset):
    """256 small tensors; ``how`` makes item 40 exit the process or hang."""

    def __init__(self, how: str = "") -> None:
        self.how = how

    def __len__(self):
        return 256

    def __getitem__(self, i):
        if i == 40 and self.how == "exit":
            os._exit(9)
        if i == 40 and self.how == "hang":
            time.sleep(3600)
        return torch.full((4,), float(i))


def rows():
    return Rows()


def rows_exit():
    return Rows("exit")


def rows_hang():
    return Rows("hang")
