"""A method named evaluate() whose results a caller trains on (PPO re-computes the log-probabilities
of old actions for its loss) is a step of training, not an evaluation pass: no PIT109, no PIT201.
The object is built as ``ActorCritic(...).to(device)``: still an ActorCritic."""
import torch
import torch.nn as nn
from torch.distributions import Categorical

device = torch.device("cpu")


class ActorCritic(nn.Module):
    def __init__(self, n_state, n_action):
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(n_state, 32), nn.Dropout(0.1), nn.Linear(32, n_action))
        self.critic = nn.Linear(n_state, 1)

    def evaluate(self, state, action):
        dist = Categorical(logits=self.actor(state))
        return dist.log_prob(action), self.critic(state), dist.entropy()


class PPO:
    def __init__(self, n_state, n_action):
        self.policy = ActorCritic(n_state, n_action).to(device)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=3e-4)

    def update(self, states, actions, old_logprobs, rewards):
        for _ in range(4):
            logprobs, values, entropy = self.policy.evaluate(states, actions)
            ratios = torch.exp(logprobs - old_logprobs.detach())
            loss = -(ratios * rewards).mean() + 0.5 * (values.squeeze() - rewards).pow(2).mean() - 0.01 * entropy.mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))

    def forward(self, x):
        return self.net(x)

    def evaluate(self, x, y):  # warning: PIT109
        with torch.no_grad():
            return (self.net(x).argmax(1) == y).float().mean().item()


def fit(x, y, meter):
    model = Classifier().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        meter.update(model.evaluate(x, y))  # still in training mode: dropout on (an update named so trains nothing)
