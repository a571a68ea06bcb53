"""Round twenty-six (a RealNVP over VAE latents): a normalizing flow samples through ``inverse()``,
its generative direction, a forward like ``sample()`` or ``decode()``; the training loop calls
``sample()`` for a grid of images now and then, and they only get saved."""
import torch
from torchvision.transforms import ToPILImage
from torchvision.utils import make_grid


def sample(model, vae, n):  # warning: PIT201
    model.eval()
    x = model.inverse(torch.randn(n, 16))
    x = vae.to("cpu").decode(x)
    ToPILImage()(make_grid(x.cpu().clamp(0, 1))).save("samples.png")
    model.train()


def train(model, vae, loader, optimizer):
    for step, im in enumerate(loader):
        loss = -model(im).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            sample(model, vae, 16)
