def fit(model, loader, opt, crit):
    model.cuda()
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
