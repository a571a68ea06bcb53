import sys

import torch

from agent import Agent

agent = Agent()
if "--evaluate" in sys.argv:
    print(agent.act(torch.randn(4)))
else:
    for step in range(10):
        state = torch.randn(4)
        action = agent.act(state)
        agent.remember(state, action)
        agent.learn(torch.stack([s for s, _ in agent.memory]), torch.randn(len(agent.memory), 2))
