def train_step(model, x, y, opt, crit):
    opt.zero_grad()
    out = model(x)
    loss = crit(out, y)
    loss.backward()
    opt.step()
    return out.argmax(-1), loss.item()
