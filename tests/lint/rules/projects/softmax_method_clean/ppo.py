import torch
from nets import C51, Actor
from torch.distributions import Categorical


class PPO:
    def __init__(self, state_dim, action_dim):
        self.actor = Actor(state_dim, action_dim, 64)
        self.optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)

    def train(self, s, a, adv, old_prob_a, clip=0.2):
        # log-probabilities asked for as such; the probabilities only feed a distribution; a method that
        # returns logits is logged as they are
        prob = self.actor.pi(s, softmax_dim=1)
        entropy = Categorical(prob).entropy().sum(0, keepdim=True)
        logp_a = self.actor.log_pi(s, softmax_dim=1).gather(1, a)
        ratio = torch.exp(logp_a - torch.log(old_prob_a))
        scale = torch.log(self.actor.value(s).abs() + 1.0).mean().detach()
        loss = -torch.min(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv) - 0.01 * entropy * scale
        self.optimizer.zero_grad()
        loss.mean().backward()
        self.optimizer.step()


class DistributionalDQN:
    def __init__(self, state_dim, actions, atoms):
        self.qnetwork = C51(state_dim, actions, atoms)
        self.optimizer = torch.optim.Adam(self.qnetwork.parameters(), lr=1e-4)

    def learn(self, states, actions, target_distr):
        # the network returns log-probabilities: gathered, used as they are
        log_distr = self.qnetwork(states)
        loss = -(log_distr.gather(1, actions).squeeze(1) * target_distr).sum(dim=1).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
