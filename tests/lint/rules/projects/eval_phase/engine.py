def one_epoch(model, crit, loader, optimizer=None):
    total = 0.0
    for x, y in loader:
        loss = crit(model(x), y)  # error: PIT109  # warning: PIT201
        total += loss.item()
        if optimizer is not None:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return total
