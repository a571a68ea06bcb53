import torch
from nets import C51, Actor
from torch.distributions import Categorical


class PPO:
    def __init__(self, state_dim, action_dim):
        self.actor = Actor(state_dim, action_dim, 64)
        self.optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)

    def train(self, s, a, adv, old_prob_a, clip=0.2):
        # the probabilities come from Actor.pi in nets.py: a softmax, gathered, then logged by hand
        prob = self.actor.pi(s, softmax_dim=1)
        entropy = Categorical(prob).entropy().sum(0, keepdim=True)
        prob_a = prob.gather(1, a)
        ratio = torch.exp(torch.log(prob_a) - torch.log(old_prob_a))  # warning: PIT602
        loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv) - 0.01 * entropy
        self.optimizer.zero_grad()
        loss.mean().backward()
        self.optimizer.step()


class DistributionalDQN:
    def __init__(self, state_dim, actions, atoms):
        self.qnetwork = C51(state_dim, actions, atoms)
        self.optimizer = torch.optim.Adam(self.qnetwork.parameters(), lr=1e-4)

    def learn(self, states, actions, target_distr):
        # the network's forward (nets.py) returns a softmax: its log, gathered, taken by hand
        prob_distr = self.qnetwork(states)
        state_action_prob = prob_distr.gather(1, actions).squeeze(1)
        loss = -(state_action_prob.log() * target_distr).sum(dim=1).mean()  # warning: PIT602
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
