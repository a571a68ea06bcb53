import torch


def fit(model, loader, val_loader, opt, crit, epochs):
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            with torch.no_grad():
                loss = crit(model(x), y)  # error: PIT104
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                loss = crit(model(x), y)
                print(loss.item())
