"""A training function that computes the next update's targets under no_grad between two updates
(SAC's learn()): not an evaluation after training; one that evaluates after its last update is."""
import torch
import torch.nn.functional as F
from torch import nn


class Actor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.1), nn.Linear(16, 2))

    def forward(self, x):
        return self.net(x)


actor, critic, critic_target = Actor(), nn.Linear(6, 1), nn.Linear(6, 1)
actor_optimizer = torch.optim.Adam(actor.parameters())
critic_optimizer = torch.optim.Adam(critic.parameters())


def learn(states, rewards, next_states):
    actor_loss = -critic(torch.cat([states, actor(states)], 1)).mean()
    actor_optimizer.zero_grad()
    actor_loss.backward()
    actor_optimizer.step()
    with torch.no_grad():  # the critic's targets, before its own update
        q_next = critic_target(torch.cat([next_states, actor(next_states)], 1))
        targets = rewards + 0.99 * q_next
    critic_loss = F.mse_loss(critic(torch.cat([states, actor(states).detach()], 1)), targets)
    critic_optimizer.zero_grad()
    critic_loss.backward()
    critic_optimizer.step()


def fit_and_score(states, rewards):  # warning: PIT109
    loss = -critic(torch.cat([states, actor(states)], 1)).mean()
    actor_optimizer.zero_grad()
    loss.backward()
    actor_optimizer.step()
    with torch.no_grad():  # after the last update, still in train mode: an evaluation
        return actor(states).argmax(1).float().mean().item()
