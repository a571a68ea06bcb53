import torch
from torch import nn


class Agent:
    def __init__(self, obs_dim, action_dim, lr):
        self.actor = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, action_dim))
        self.opt = torch.optim.Adam(self.actor.parameters(), lr=lr)

    def act(self, obs):  # warning: PIT201
        obs = torch.as_tensor(obs).unsqueeze(0)
        return self.actor(obs).cpu().numpy()[0]

    def update(self, obs, target):
        loss = (self.actor(obs) - target).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()
