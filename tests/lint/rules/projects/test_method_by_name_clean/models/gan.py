"""The twin: the training script calls test() in its loop, so the no_grad stays."""
import torch
from torch import nn


class Pix2Pix:
    def __init__(self):
        self.net = nn.Linear(4, 4)
        self.opt = torch.optim.Adam(self.net.parameters())

    def optimize(self, x):
        loss = self.net(x).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

    def test(self, x):
        with torch.no_grad():  # the training loop calls test() too
            return self.net(x)
