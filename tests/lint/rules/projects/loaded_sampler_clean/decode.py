"""The factory's model run under inference_mode."""
import torch

from model import load_model

vae = load_model("generator.pt")
with torch.inference_mode():
    decoded = vae.sample(4)
decoded = decoded.clamp(-1, 1)
torch.save(decoded, "decoded.pt")
