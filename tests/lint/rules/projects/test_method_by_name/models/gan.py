"""Round twenty-five (BicycleGAN): a model class whose test() a test script calls on what a factory
outside the project made (``model = create_model(opt)``): the call graph cannot place the call, but
every file that calls ``.test(`` trains nothing, so its no_grad is inference."""
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
        with torch.no_grad():  # info: PIT202
            return self.net(x)
