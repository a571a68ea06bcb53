"""A model handed out by a project factory (it loads the weights and switches to eval) is a model:
its forward here runs with autograd on."""
import torch

from model import load_model

vae = load_model("generator.pt")
z = torch.randn(4, 8)
decoded = vae.sample(4)  # error: PIT201
decoded = decoded.clamp(-1, 1)
torch.save(decoded, "decoded.pt")
