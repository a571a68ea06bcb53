# no_grad blocks in a file that never trains, which inference_mode would break or not help: the
# advantages computed from stored values (arithmetic, no model), and a target network's values
# returned to the loss of agent.py (an inference tensor fails when autograd saves it for backward).
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
