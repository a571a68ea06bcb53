from steps import train_step


def fit(model, loader, opt, crit):
    total = 0.0
    history = []
    for x, y in loader:
        loss = train_step(model, x, y, opt, crit)
        total += loss  # error: PIT102
        history.append(loss)  # error: PIT102
    return total, history
