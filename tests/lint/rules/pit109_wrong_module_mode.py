def train(model, loader, val_loader, opt, crit, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            crit(model(x), y).backward()
            opt.step()
        model.eval()  # error: PIT109
        evaluate_loss(model, val_loader)


def train_correctly(model, loader, val_loader, opt, crit, epochs):
    for epoch in range(epochs):
        model.train()
        model.backbone.eval()  # a frozen submodule, set back each epoch after train()
        for x, y in loader:
            opt.zero_grad()
            crit(model(x), y).backward()
            opt.step()
        model.eval()
        evaluate_loss(model, val_loader)


def train_with_a_helper(model, loader, val_loader, opt, crit, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            crit(model(x), y).backward()
            opt.step()
        validate(model, val_loader)  # error: PIT109


def validate(model, val_loader):
    model.eval()
    return evaluate_loss(model, val_loader)


def evaluate_loss(model, loader):  # error: PIT201
    return sum(float(model(x).sum()) for x, _ in loader)
