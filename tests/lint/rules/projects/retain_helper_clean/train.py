from steps import aux_loss, first_loss


def fit(model, loader, opt, crit, aux):
    for x, y in loader:
        out = first_loss(model, x, y, opt, crit)
        aux_loss(out, aux)
        opt.step()
