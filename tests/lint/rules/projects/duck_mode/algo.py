import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self, obs_dim, action_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 64), nn.Dropout(0.1), nn.Linear(64, action_dim))

    def forward(self, obs):
        return self.net(obs)

    def act(self, obs):
        return self.net(obs).argmax(-1)


class PPO:
    def __init__(self, policy, lr):
        self.policy = policy
        self.opt = torch.optim.Adam(policy.parameters(), lr=lr)

    def prep_training(self):
        self.policy.train()

    def prep_rollout(self):
        self.rolling = True  # the policy stays in training mode

    def update(self, obs, target):
        loss = (self.policy(obs) - target).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()
