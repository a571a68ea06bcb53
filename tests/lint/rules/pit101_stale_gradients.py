import torch


def no_zero_grad(model, loader, opt, crit):
    for x, y in loader:
        loss = crit(model(x), y)
        loss.backward()
        opt.step()  # error: PIT101


def zero_grad_before_the_loop_only(model, loader, crit):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    for x, y in loader:
        crit(model(x), y).backward()
        optimizer.step()  # error: PIT101


def correct(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()


def accumulation_with_step_under_a_condition(model, loader, opt, crit, k=4):
    for i, (x, y) in enumerate(loader):
        (crit(model(x), y) / k).backward()
        if (i + 1) % k == 0:
            opt.step()
            opt.zero_grad()


def set_to_none_by_hand(model, loader, opt, crit):
    for x, y in loader:
        crit(model(x), y).backward()
        opt.step()
        for p in model.parameters():
            p.grad = None


def lbfgs_closure(model, loader, crit):
    opt = torch.optim.LBFGS(model.parameters())
    for x, y in loader:
        def closure():
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            return loss
        opt.step(closure)


def helper_clears(model, loader, opt, crit):
    for x, y in loader:
        reset(opt)
        crit(model(x), y).backward()
        opt.step()


def reset(optimizer):
    optimizer.zero_grad(set_to_none=True)


def scheduler_step_is_not_an_optimizer(model, loader, opt, sched, crit):
    for x, y in loader:
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
        sched.step()


def suppressed(model, loader, opt, crit):
    for x, y in loader:
        crit(model(x), y).backward()
        opt.step()  # noqa: stale-gradients


def gan_second_optimizer_never_zeroed(net_g, net_d, loader, crit):
    opt_d = torch.optim.Adam(net_d.parameters())
    opt_g = torch.optim.Adam(net_g.parameters())
    for real in loader:
        opt_d.zero_grad()
        fake = net_g(real)
        crit(net_d(real), net_d(fake.detach())).backward()
        opt_d.step()
        crit(net_d(fake), real).backward()
        opt_g.step()  # error: PIT101


def gan_each_optimizer_zeroed_through_its_model(net_g, net_d, loader, crit):
    opt_d = torch.optim.Adam(net_d.parameters())
    opt_g = torch.optim.Adam(net_g.parameters())
    for real in loader:
        net_d.zero_grad()
        fake = net_g(real)
        crit(net_d(real), net_d(fake.detach())).backward()
        opt_d.step()
        net_g.zero_grad()
        crit(net_d(fake), real).backward()
        opt_g.step()


def distributed_autograd(model, loader, dist_opt):
    import torch.distributed.autograd as dist_autograd

    for x, y in loader:
        with dist_autograd.context() as context_id:  # gradients live in the context: nothing to zero
            loss = model(x).sum()
            dist_autograd.backward(context_id, [loss])
            dist_opt.step(context_id)


def stepped_twice_without_clearing(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward(retain_graph=True)
        opt.step()
        loss.backward()
        opt.step()  # error: PIT101


def stepped_twice_cleared_in_between(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()


def zero_grad_only_in_rank_zeros_logging_block(model, loader, opt, crit, rank):
    for step, (x, y) in enumerate(loader):
        loss = crit(model(x), y)
        loss.backward()
        opt.step()  # error: PIT101
        if rank == 0:
            print(step, loss.item())
            opt.zero_grad()


def zero_grad_only_every_k_steps(model, loader, opt, crit, k=10):
    for i, (x, y) in enumerate(loader):
        if i % k == 0:
            opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()  # error: PIT101


def zero_grad_in_both_branches(model, loader, opt, crit, set_to_none):
    for x, y in loader:
        if set_to_none:
            opt.zero_grad(set_to_none=True)
        else:
            opt.zero_grad(set_to_none=False)
        crit(model(x), y).backward()
        opt.step()


def zero_grad_before_a_skip_and_the_step_under_the_same_condition(model, loader, opt, crit):
    for x, y in loader:
        if x is None:
            continue
        with torch.autocast("cpu"):
            opt.zero_grad()
            loss = crit(model(x), y)
        loss.backward()
        opt.step()


def accumulation_window_cleared_at_its_start(model, loader, opt, crit, k=4):
    for i, (x, y) in enumerate(loader):
        if i % k == 0:
            opt.zero_grad()
        (crit(model(x), y) / k).backward()
        if (i + 1) % k == 0:
            opt.step()


def mixed_precision_or_not_steps_once(model, loader, opt, crit, scaler, use_amp):
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)
        if use_amp:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
