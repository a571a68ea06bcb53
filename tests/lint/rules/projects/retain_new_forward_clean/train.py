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
        d_fake = disc(fake)
        d_loss = crit(disc(real), 1) + crit(d_fake, 0)
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)  # needed: g_loss reuses d_fake's graph
        opt_d.step()
        g_loss = crit(d_fake, 1)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
