# A runner that trains and samples: sampling is a path of its own beside train() (the script picks
# one), so its no_grad is inference-only code although the file trains.
import torch


class Runner:
    def __init__(self, model, batches):
        self.model, self.batches = model, batches

    def train(self):
        opt = torch.optim.Adam(self.model.parameters())
        for x in self.batches:
            opt.zero_grad()
            loss = self.model(x).pow(2).mean()
            loss.backward()
            opt.step()

    def sample(self):
        self.model.eval()
        return self.sample_images(16)

    def sample_images(self, n):
        with torch.no_grad():  # error: PIT202
            return self.model(torch.randn(n, 8)).tolist()
