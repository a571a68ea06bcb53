# An agent acts under no_grad in the loop that also trains it: the training path, where no_grad
# stays (inference tensors could reach the learning step).
import torch


class Agent:
    def __init__(self, net):
        self.net = net
        self.opt = torch.optim.Adam(net.parameters())

    def act(self, state):
        with torch.no_grad():
            return self.net(state).argmax().item()

    def learn(self, states):
        self.opt.zero_grad()
        loss = self.net(states).pow(2).mean()
        loss.backward()
        self.opt.step()
