# The clean twin, and a pure evaluation helper: there inference_mode applies.
import numpy as np
import torch


def advantages(rewards, values, gamma=0.99, lam=0.95):
    adv = np.zeros_like(rewards)
    gae = 0.0
    with torch.no_grad():
        deltas = rewards[:-1] + gamma * values[1:] - values[:-1]
        for t in reversed(range(len(deltas))):
            gae = deltas[t] + gamma * lam * gae
            adv[t] = gae
    return adv


def targets(target_net, rewards, next_states, gamma=0.99):
    with torch.no_grad():
        best = target_net(next_states).max(1).values
        y = rewards + gamma * best
    return y


def greedy_actions(q_net, states):
    with torch.no_grad():  # info: PIT202
        return q_net(states).argmax(1).tolist()
