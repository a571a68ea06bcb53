import torch.nn.functional as F
from torch import nn


class Actor(nn.Module):
    def __init__(self, state_dim, action_dim, width):
        super().__init__()
        self.l1 = nn.Linear(state_dim, width)
        self.l2 = nn.Linear(width, action_dim)

    def forward(self, state):
        return F.relu(self.l1(state))

    def pi(self, state, softmax_dim=0):
        n = self.forward(state)
        prob = F.softmax(self.l2(n), dim=softmax_dim)
        return prob

    def log_pi(self, state, softmax_dim=0):
        return F.log_softmax(self.l2(self.forward(state)), dim=softmax_dim)

    def value(self, state):
        return self.l2(self.forward(state))


class C51(nn.Module):
    def __init__(self, state_dim, actions, atoms):
        super().__init__()
        self.actions, self.atoms = actions, atoms
        self.head = nn.Linear(state_dim, actions * atoms)

    def forward(self, state):
        q_distr = self.head(state)
        return F.log_softmax(q_distr.view(-1, self.atoms), dim=1).view(-1, self.actions, self.atoms)
