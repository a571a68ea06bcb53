import hydra
import torch


def make_agent(cfg):
    # the agent's class is named in a config: no project class is built here
    return hydra.utils.instantiate(cfg.agent)


def run(cfg, env, replay):
    agent = make_agent(cfg)
    obs = env.reset()
    for _ in range(cfg.steps):
        with torch.inference_mode():  # every call of act() runs with autograd off
            action = agent.act(obs)
        obs = env.step(action)
        agent.update(*replay.sample())
    return agent
