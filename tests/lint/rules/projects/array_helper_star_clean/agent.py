"""The twin with the action chosen under no_grad: nothing to report."""
import torch
import torch.nn as nn
from util import *


class Agent:
    def __init__(self):
        self.actor = nn.Linear(3, 1)
        self.opt = torch.optim.Adam(self.actor.parameters())

    @torch.no_grad()
    def select_action(self, s):
        action = to_numpy(self.actor(torch.as_tensor(s))).squeeze(0)
        return action

    def update_policy(self, batch):
        self.opt.zero_grad()
        loss = self.actor(batch).pow(2).mean()
        loss.backward()
        self.opt.step()
