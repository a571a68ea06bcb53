import torch


def fit(model, loader, opt, crit):
    losses = []
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss)
    return torch.stack(losses).mean()
