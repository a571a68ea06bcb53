def evaluate(model, loader):
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(-1) == y).sum().item()
    return correct
