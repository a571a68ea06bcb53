from steps import train_step


def fit(model, loader, opt, crit):
    for x, y in loader:
        train_step(model, x, y, opt, crit)  # once per batch, and no later backward uses the graph
