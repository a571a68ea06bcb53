"""A model file's own check of its classes: no training in the file, no weights loaded, so the
forward at the bottom prints shapes of an untrained model (not PIT201)."""
import torch
import torch.nn as nn
from omegaconf import OmegaConf


class Encoder(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.conv = nn.Conv1d(1, n, 3)

    def forward(self, x):
        return self.conv(x)


if __name__ == "__main__":
    hp = OmegaConf.load("config/default.yaml")  # a config, not weights
    encoder = Encoder(4)
    w = encoder(torch.randn(2, 1, 16))
    print("w", w.size())
