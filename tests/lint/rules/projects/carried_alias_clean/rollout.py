from learner import update


def collect(env, agent, buffer, net, opt, crit, horizon):
    h_out = agent.initial_state()
    state = env.reset()
    for _ in range(horizon):
        h_in = h_out.detach()
        action, h_out = agent.policy_net.get_action(state, h_in)
        state, reward = env.step(action)
        buffer.append((state, action, reward))
        update(net, opt, crit, buffer)
