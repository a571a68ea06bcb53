import hydra


def make_agent(cfg):
    # the agent's class is named in a config: no project class is built here
    return hydra.utils.instantiate(cfg.agent)


def run(cfg, env, replay):
    agent = make_agent(cfg)
    obs = env.reset()
    for _ in range(cfg.steps):
        action = agent.act(obs)  # act() of the class the config names runs with autograd on
        obs = env.step(action)
        agent.update(*replay.sample())
    return agent
