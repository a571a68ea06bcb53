from agent import Agent


def run(env, nets, opts, steps):
    agent = Agent(*nets, *opts)
    state = env.reset()
    for _ in range(steps):
        state, target = env.sample()
        agent.learn(state, target)


def gan(gen, disc, loader, opt_g, opt_d, crit, noise):
    for real in loader:
        fake = gen(noise())
        d_loss = crit(disc(real), 1) + crit(disc(fake), 0)
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)  # error: PIT103
        opt_d.step()
        fake2 = gen(noise())  # the generator step makes its own graph
        g_loss = crit(disc(fake2), 1)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
