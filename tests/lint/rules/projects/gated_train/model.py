import torch.nn as nn


class CharModel(nn.Module):
    def __init__(self, vocab, opt_factory, crit):
        super().__init__()
        self.lstm = nn.LSTM(vocab, 64, num_layers=2, dropout=0.1)
        self.head = nn.Linear(64, vocab)
        self.opt = opt_factory(self.parameters())
        self.crit = crit

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out)

    def train(self, data, adjust=True):
        x, y = data
        pred = self(x)
        if adjust:
            self.opt.zero_grad()
            loss = self.crit(pred, y)
            loss.backward()
            self.opt.step()
        return pred.detach()
