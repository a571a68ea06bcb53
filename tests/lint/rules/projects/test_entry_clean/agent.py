import torch
from torch import nn


class Agent:
    def __init__(self):
        self.net = nn.Linear(4, 2)
        self.optimizer = torch.optim.Adam(self.net.parameters())
        self.memory = []

    def act(self, state):
        with torch.no_grad():  # chosen in the loop that also learns: its action feeds the memory
            return self.net(state).argmax().item()

    def remember(self, state, action):
        self.memory.append((state, action))

    def learn(self, states, targets):
        self.optimizer.zero_grad()
        nn.functional.mse_loss(self.net(states), targets).backward()
        self.optimizer.step()
