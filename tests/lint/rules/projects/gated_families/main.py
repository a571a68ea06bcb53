import torch
from torch import nn


def backprop(model, data, optimizer, training=True):
    """One model family per branch (TranAD's backprop): trains, or scores when training=False."""
    loss_fn = nn.MSELoss(reduction="none")
    if "AE" in model.name:
        if training:
            for d in data:
                loss = loss_fn(model(d), d).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            return float(loss)
        else:
            outs = []
            for d in data:
                out = model(d)  # error: PIT201
                outs.append(out)  # error: PIT102
            outs = torch.stack(outs)
            loss = loss_fn(outs, data)  # the name the training branches run backward on
            return loss.detach().numpy()
    if "VAE" in model.name:
        if training:
            for d in data:
                loss = loss_fn(model(d), d).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            return float(loss)
        else:
            outs = []
            for d in data:
                out = model(d)  # error: PIT201
                outs.append(out)  # error: PIT102
            outs = torch.stack(outs)
            loss = loss_fn(outs, data)  # the name the training branches run backward on
            return loss.detach().numpy()
    if training:  # every other family
        for d in data:
            loss = loss_fn(model(d), d).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return float(loss)
    return None


class AE(nn.Module):
    name = "AE"

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


model = AE()
optimizer = torch.optim.Adam(model.parameters())
data = torch.randn(6, 4)
for epoch in range(2):
    model.train()
    backprop(model, data, optimizer)
model.eval()
scores = backprop(model, data, optimizer, training=False)
