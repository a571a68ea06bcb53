import torch


def train_epoch(model, loader, opt, crit):
    total = 0
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()
    return total / len(loader)


@torch.no_grad()
def test_epoch(model, loader, crit):
    model.eval()
    total = 0
    for x, y in loader:
        loss = crit(model(x), y)
        total += loss
    return total / len(loader)
