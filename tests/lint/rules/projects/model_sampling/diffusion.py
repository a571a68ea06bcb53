import torch
import torch.nn as nn


class Diffusion(nn.Module):
    def __init__(self, steps=4):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.steps = steps

    def forward(self, x):
        return (self.net(x) - x).pow(2).mean()

    @torch.no_grad()  # info: PIT202
    def remove_noise(self, x, t):
        return x - self.net(x) / (t + 1)

    @torch.no_grad()  # info: PIT202
    def sample(self, n):
        x = torch.randn(n, 8)
        for t in reversed(range(self.steps)):
            x = self.remove_noise(x, t)
        return x.cpu()


class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    @torch.no_grad()
    def encode(self, x):  # a frozen encoder the training forward runs: left alone
        return self.net(x)
