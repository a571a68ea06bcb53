"""PIT201 shapes from issue 48's eleventh round: a GAN trainer's sample() whose generator forward is
made one call away, in a helper the training steps also use (``self.G``, a GAN's model by name);
the helper itself stays silent (its training callers backpropagate through it), and so does a
sample() that opens inference_mode. A model method that opens no_grad around its own work needs
none at its call; ``serialize_model(m)`` is no forward; a forward appended to a local list goes
where the list goes (returned, then only argmaxed by every caller: a finding)."""
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, generator: nn.Module, critic: nn.Module, opt: torch.optim.Optimizer):
        self.G, self.D, self.opt = generator, critic, opt

    def sample_generator(self, n):
        z = torch.randn(n, 8)
        generated = self.G(z)
        return generated

    def train_step(self):
        self.opt.zero_grad()
        loss = -self.D(self.sample_generator(16)).mean()
        loss.backward()
        self.opt.step()

    def sample(self, n):  # warning: PIT201
        generated = self.sample_generator(n)
        return generated.data.cpu().numpy()

    def quiet_sample(self, n):
        with torch.inference_mode():
            generated = self.sample_generator(n)
        return generated.cpu().numpy()


def sample(trainer, n):
    return trainer.sample(n)


class PixelModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    def forward(self, x):
        return self.net(x)

    def sample_pixels(self, n):  # opens no_grad around its own work: calling it needs none
        canvas = torch.zeros(n, 8)
        with torch.no_grad():
            for i in range(8):
                canvas[:, i] = self.forward(canvas)[:, i]
        return canvas


def test_and_sample(model, loader, optimizer):
    for x in loader:
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
    samples = model.sample_pixels(4)
    serialize_model(model)  # what is done to a model, not its forward
    return samples.numpy()


def serialize_model(model):
    return {k: v.cpu() for k, v in model.state_dict().items()}


def pass_data_iteratively(model, graphs):  # warning: PIT201
    model.eval()
    output = []
    for i in range(0, len(graphs), 64):
        output.append(model(graphs[i:i + 64]).detach())  # a local list: it goes where the list goes
    return torch.cat(output, 0)


def accuracy(model, graphs, labels):
    output = pass_data_iteratively(model, graphs)
    return output.max(1)[1].eq(labels).sum().item()
