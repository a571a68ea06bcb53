def update(net, opt, crit, buffer):
    states, actions, rewards = zip(*buffer)
    loss = crit(net(states, actions), rewards)
    opt.zero_grad()
    loss.backward()
    opt.step()
