from steps import train_step


def fit(model, loader, opt, crit):
    total = 0.0
    for x, y in loader:
        pred, loss = train_step(model, x, y, opt, crit)
        total += loss
    return total
