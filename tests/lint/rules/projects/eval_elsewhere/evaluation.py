def evaluate(model, loader):  # error: PIT109, PIT201
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(-1) == y).sum().item()
    return correct
