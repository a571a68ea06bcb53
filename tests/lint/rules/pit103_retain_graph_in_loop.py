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


def gradient_penalty_needs_the_graph(critic, loader, opt):
    import torch

    for real in loader:
        opt.zero_grad()
        out = critic(real)
        grad = torch.autograd.grad(out.sum(), real, create_graph=True, retain_graph=True)[0]
        out.mean().backward(retain_graph=True)
        penalty = torch.autograd.grad(grad.sum(), real)[0]  # a later pass over the same graph
        opt.step()
        del penalty


def same_graph_every_iteration(losses):
    for loss in losses:  # each loss is differentiated in turn: the graph is shared
        loss.backward(retain_graph=True)


def hidden_detached_in_place(rnn, head, chunks, opt):
    h = None
    for x in chunks:
        if h is not None:
            h.detach_()
        opt.zero_grad()
        out, h = rnn(x, h)
        head(out).sum().backward()
        opt.step()


def state_rebound_from_the_loader(rnn, head, loader, opt):
    for x, h in loader:
        opt.zero_grad()
        out, h = rnn(x, h)
        head(out).sum().backward()
        opt.step()
