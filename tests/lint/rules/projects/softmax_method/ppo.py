import torch
from nets import Actor
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
