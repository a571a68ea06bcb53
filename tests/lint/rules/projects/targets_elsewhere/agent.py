import torch
import torch.nn.functional as F

import buffer


def train(q_net, target_net, optimizer, batches):
    for states, actions, rewards, next_states in batches:
        y = buffer.targets(target_net, rewards, next_states)
        q = q_net(states).gather(1, actions[:, None]).squeeze(1)
        loss = F.mse_loss(q, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
