from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(8, 8)

    def forward(self, x):
        return self.out(self.drop(x))
