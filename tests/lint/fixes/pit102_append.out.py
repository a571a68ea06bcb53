def fit(model, loader, opt, crit):
    losses = []
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        out = model(x)
        loss = crit(out, y)  # the loss
        loss.backward()
        opt.step()
        losses.append(loss.item())   # keep for the plot
        total += loss.item()
        model.last = out.detach()
    return losses, total
