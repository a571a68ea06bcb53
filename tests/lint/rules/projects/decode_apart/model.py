import torch
from torch import nn


class Summarizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.GRU(8, 8, batch_first=True)
        self.decoder = nn.Linear(8, 8)

    def forward(self, x):
        return self.decoder(self.encoder(x)[0])


def load(path):
    model = Summarizer()
    model.load_state_dict(torch.load(path, weights_only=True))
    return model.eval()


class Trainer:
    def __init__(self):
        self.net = Summarizer()
        self.opt = torch.optim.Adam(self.net.parameters())

    def optimize(self, batch):
        loss = self.net(batch).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
