"""In a file that trains, a module-level test() or predict() that no project code calls is an entry
point of its own (USAD's testing(), run from a notebook; chenyuntc's test() run by fire): pure
inference, so its no_grad could be inference_mode. An uncalled evaluate() (often called from a
training loop elsewhere) and a test() the training loop calls are left alone."""
import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def testing(net, loader):
    results = []
    with torch.no_grad():  # info: PIT202
        for x in loader:
            results.append(net(x))
    return results


@torch.no_grad()  # info: PIT202
def predict(net, x):
    return net(x).argmax(1).tolist()


def evaluate(net, loader):
    with torch.no_grad():
        return [net(x).sum().item() for x in loader]


def test(net, x):
    with torch.no_grad():
        return net(x).mean().item()


for _ in range(3):
    loss = model(torch.randn(2, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.eval()
    print(test(model, torch.randn(2, 4)))
    model.train()
