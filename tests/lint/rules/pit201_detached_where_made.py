"""A forward detached where it is made, in code that trains nothing, built a graph nothing uses: a
bandit's ``predict()`` that keeps ``model(x).detach()`` on the object (neural-UCB). Where the same
function trains (a GAN's fake batch, a target made for the loss below), the idiom stays silent."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


class Bandit:
    def __init__(self, features):
        self.model = Net()
        self.features = features
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.mu_hat = torch.zeros(10)

    def fit(self, x, y):
        for _ in range(10):
            loss = nn.functional.mse_loss(self.model(x).squeeze(), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def predict(self, i):  # error: PIT201
        self.model.eval()
        self.mu_hat[i] = self.model.forward(torch.FloatTensor(self.features[i])).detach().squeeze()

    def fit_on_own_targets(self, x):
        target = self.model(x).detach()
        loss = (self.model(x + 1) - target).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
