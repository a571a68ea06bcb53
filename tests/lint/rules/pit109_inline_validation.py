"""Validation written inline after the training loop, over a loader named for evaluation, with no
eval() in between (Medical-Transformer): the model (with batch-norm) validates in training mode,
with autograd on or not. The twin switches first."""
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
trainloader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
valloader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(2)]

for epoch in range(3):
    for x, y in trainloader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch % 2 == 0:
        for batch_idx, (x, y) in enumerate(valloader):
            y_out = model(x)  # warning: PIT109  # error: PIT201
            print(batch_idx, y_out.detach().cpu().numpy().mean())


def fit(net, optimizer, train_loader, val_loader):
    for _ in range(2):
        net.train()
        for x, y in train_loader:
            loss = nn.functional.mse_loss(net(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        net.eval()
        with torch.no_grad():
            for x, y in val_loader:
                print(nn.functional.mse_loss(net(x), y).item())
