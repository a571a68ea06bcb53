def retains_for_nothing(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        crit(model(x), y).backward(retain_graph=True)  # error: PIT103
        opt.step()


def two_losses_retaining_on_the_first_only(model, loader, opt, crit, aux):
    for x, y in loader:
        opt.zero_grad()
        out = model(x)
        crit(out, y).backward(retain_graph=True)
        aux(out).backward()
        opt.step()


def hidden_state_carried(rnn, head, chunks, opt):
    h = None
    for x in chunks:
        opt.zero_grad()
        out, h = rnn(x, h)  # error: PIT103
        head(out).sum().backward()
        opt.step()


def truncated_bptt_with_detach(rnn, head, chunks, opt):
    h = None
    for x in chunks:
        if h is not None:
            h = h.detach()
        opt.zero_grad()
        out, h = rnn(x, h)
        head(out).sum().backward()
        opt.step()
