"""PIT102 follows a name to its last binding before the use, an unpacking included: ``loss, acc =
eval_step(...)`` (numbers) after ``loss, acc = train_step(...)`` (the graph) leaves the validation
total clean, while the training-side list keeps every step's graph."""
import torch
import torch.nn.functional as F


def train_step(net, optimizer, x, y):
    optimizer.zero_grad()
    out = net(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    optimizer.step()
    return loss, (out.argmax(1) == y).float().mean().item()


def eval_step(net, x, y):
    with torch.no_grad():
        out = net(x)
        return F.cross_entropy(out, y).item(), (out.argmax(1) == y).float().mean().item()


def fit(net, optimizer, loader, val_loader, history, val_history):
    for epoch in range(10):
        net.train()
        for x, y in loader:
            loss, acc = train_step(net, optimizer, x, y)
            history.append(loss)  # warning: PIT102
        val_total = 0
        net.eval()
        for x, y in val_loader:
            loss, acc = eval_step(net, x, y)  # rebinds loss to a number
            val_total += loss
        val_history.append(val_total / len(val_loader))
