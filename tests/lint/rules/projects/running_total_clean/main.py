from steps import test_epoch, train_epoch


def run(model, train_loader, test_loader, opt, crit, epochs):
    history = []
    for _ in range(epochs):
        model.train()
        train_loss = train_epoch(model, train_loader, opt, crit)
        history.append(train_loss)
        print(test_epoch(model, test_loader, crit))
    return history
