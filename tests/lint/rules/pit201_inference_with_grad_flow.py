"""PIT201 through values and call sites: what a method of a local object is given, a phase
parameter that skips the backward, a model file's own smoke test."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


def train_batch(model, loss, x, y, optimizer):
    # a loss object that keeps what its eval_batch is given, then backward() on the object: used
    out = model(x)
    loss.eval_batch(out, y)
    loss.backward()
    optimizer.step()


def score(model, metric, x, y):  # warning: PIT201
    out = model(x)
    metric.observe(out, y)  # the metric never reaches a backward
    return float(metric.compute())


def plot(model, x, fig):  # warning: PIT201
    ax = fig.add_subplot(1, 1, 1)
    pred = model(x)
    ax.imshow(pred.detach().numpy())
    ax.set_title("prediction")  # set_title keeps nothing of ax's arguments' graphs alive


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def fit(self, train_data, test_data):
        self.model.train()
        self.iteration(train_data)
        self.run_epoch(train_data, cross_valid=False)
        self.quiet(train_data, split="train")
        self.epoch(train_data, "train")
        self.model.eval()
        self.epoch(test_data, "test")
        self.iteration(test_data, train=False)
        self.run_epoch(test_data, cross_valid=True)
        self.quiet(test_data, split="test")
        with torch.inference_mode():
            self.run_epoch_too(test_data, cross_valid=True)

    def iteration(self, data, train=True):
        for x, y in data:
            loss = self.model(x).sum()  # warning: PIT201
            if train:
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

    def run_epoch(self, data, cross_valid=False):
        total = 0.0
        for x, y in data:
            loss = self.model(x).sum()  # warning: PIT201
            if not cross_valid:
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            total += loss.item()
        return total

    def run_epoch_too(self, data, cross_valid=False):
        for x, y in data:
            loss = self.model(x).sum()  # its only evaluation call runs under inference_mode
            if not cross_valid:
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

    def quiet(self, data, split):
        torch.set_grad_enabled(split == "train")  # it turns autograd off itself
        for x, y in data:
            loss = self.model(x).sum()
            if split == "train":
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
        torch.set_grad_enabled(True)

    def epoch(self, data, phase):
        for x, y in data:
            loss = self.model(x).sum()  # warning: PIT201
            if phase in ("train", "finetune"):
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()


class GanTrainer:
    """A GAN's networks by their usual one-letter names: ``self.G(z)`` is a forward."""

    def __init__(self, generator, discriminator, g_opt, d_opt):
        self.G, self.D, self.g_opt, self.d_opt = generator, discriminator, g_opt, d_opt

    def step(self, real, z):
        d_loss = self.D(self.G(z).detach()).mean() - self.D(real).mean()
        self.d_opt.zero_grad()
        d_loss.backward()
        self.d_opt.step()

    def progress_images(self, fixed_z):  # warning: PIT201
        return self.G(fixed_z).cpu().data.numpy()
