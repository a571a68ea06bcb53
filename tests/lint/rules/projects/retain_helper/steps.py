def train_step(model, x, y, opt, crit):
    opt.zero_grad()
    loss = crit(model(x), y)
    loss.backward(retain_graph=True)  # error: PIT103
    opt.step()
    return loss.item()
