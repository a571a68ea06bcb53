def train_epoch(model, loader, opt, crit):
    total = 0
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        total += loss  # error: PIT102
    return total / len(loader)


def test_epoch(model, loader, crit):  # error: PIT201
    model.eval()
    total = 0
    for x, y in loader:
        loss = crit(model(x), y)
        total += loss  # error: PIT102
    return total / len(loader)
