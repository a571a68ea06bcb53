from evaluation import evaluate


def fit(model, loader, val_loader, opt, crit, epochs):
    for _ in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            crit(model(x), y).backward()
            opt.step()
        print(evaluate(model, val_loader))
