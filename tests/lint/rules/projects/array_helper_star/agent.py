"""DDPG's shape: ``from util import *`` brings ``to_numpy``; the action it makes is an array, so the
reward the environment returns for it carries no graph (no PIT102 on ``episode_reward += reward``);
the actor's forward itself still records a graph nothing uses (PIT201)."""
import torch
import torch.nn as nn
from util import *


class Agent:
    def __init__(self):
        self.actor = nn.Linear(3, 1)
        self.opt = torch.optim.Adam(self.actor.parameters())

    def select_action(self, s):  # warning: PIT201
        action = to_numpy(self.actor(torch.as_tensor(s))).squeeze(0)
        return action

    def update_policy(self, batch):
        self.opt.zero_grad()
        loss = self.actor(batch).pow(2).mean()
        loss.backward()
        self.opt.step()
