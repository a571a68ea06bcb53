"""PIT201 shapes from issue 48's eleventh round: a GAN trainer's sample() whose generator forward is
made one call away, in a helper the training steps also use (``self.G``, a GAN's model by name);
the helper itself stays silent (its training callers backpropagate through it), and so does a
sample() that opens inference_mode."""
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
