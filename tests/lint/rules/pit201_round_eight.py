"""PIT201 shapes from issue 48's eighth round: the wrapped module of a DataParallel called for a
logging sample, a forward whose value ends in an array through a chain of single readers, and one
that ends in a project helper returning arrays; each with the twin that trains on the value."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


def to_np(t):
    if t is None:
        return None
    elif t.nelement() == 0:
        return np.array([])
    return t.cpu().detach().numpy()


def train(generator, optimizer, loader, writer):  # warning: PIT201
    generator.train()
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.mse_loss(generator(x), y)
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            sample = generator.module(x[:1])  # DataParallel's model: a forward, for the log only
            writer.add_image("sample", sample[0].detach().cpu().numpy(), step)


def test_single_case(net, patches):  # warning: PIT201
    score = 0
    for patch in patches:
        y1 = net(patch)
        y = F.softmax(y1, dim=1)  # the only reader of y1
        y = y.cpu().data.numpy()  # ... and y rebound to an array: the graph ends here
        score = score + y
    return score


def test_single_case_trained(net, patches, optimizer):
    for patch in patches:
        y1 = net(patch)
        y = F.softmax(y1, dim=1)
        optimizer.zero_grad()
        y.sum().backward()  # the chain reaches a backward: used
        optimizer.step()
        y = y.cpu().data.numpy()


class Agent:
    def __init__(self):
        self.actor = Net()

    def act(self, obs):  # warning: PIT201
        obs = torch.as_tensor(obs).unsqueeze(0)
        action = self.actor(obs).clamp(-1, 1)
        return to_np(action[0])  # a helper every return of which is an array: nothing keeps the graph

    def act_tensor(self, obs):
        obs = torch.as_tensor(obs).unsqueeze(0)
        return self.actor(obs).clamp(-1, 1)  # returned as a tensor: the caller decides


def run(agent, env):
    obs = env.reset()
    for _ in range(10):
        obs = env.step(agent.act(obs))
    return agent.act_tensor(obs)
