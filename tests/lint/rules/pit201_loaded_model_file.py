"""The same model file, but its main block loads trained weights and predicts: an inference pass
with autograd on (PIT201)."""
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.conv = nn.Conv1d(1, n, 3)

    def forward(self, x):
        return self.conv(x)


if __name__ == "__main__":
    encoder = Encoder(4)
    encoder.load_state_dict(torch.load("encoder.pt", weights_only=True))
    w = encoder(torch.randn(2, 1, 16))  # warning: PIT201
    print("w", w.size())
