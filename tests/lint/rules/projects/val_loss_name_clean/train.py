import torch


def fit(model, loader, val_loader, opt, crit, epochs):
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                loss = crit(model(x), y)  # the validation loss reuses the name: never backpropagated
                print(loss.item())
