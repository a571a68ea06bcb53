"""Round twenty-five's development part (an attention seq2seq): the trainer's dev evaluation decodes
with the model's ``beam_decode()`` after every epoch's steps and never calls eval(), so the
encoder's dropout stays on; the twin switches to eval() first and back to train() after."""
import torch
from torch import nn


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.LSTM(8, 8, dropout=0.3, num_layers=2)
        self.out = nn.Linear(8, 8)

    def forward(self, src):
        return self.out(self.enc(src)[0])

    def beam_decode(self, src, beam_size=3):
        return self.out(self.enc(src)[0]).topk(beam_size, -1).indices


class Trainer:
    def run(self, loader, dev, epochs):
        model = Seq2Seq()
        optimizer = torch.optim.Adam(model.parameters())
        for _ in range(epochs):
            for src, trg in loader:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(src), trg).backward()
                optimizer.step()
            self._eval(model, dev)
            self._eval_switched(model, dev)

    def _eval(self, model, data):  # error: PIT109
        with torch.no_grad():
            return [model.beam_decode(src).tolist() for src in data]

    def _eval_switched(self, model, data):
        model.eval()
        with torch.no_grad():
            texts = [model.beam_decode(src).tolist() for src in data]
        model.train()
        return texts
