import torch

from diffusion import Diffusion

model = Diffusion()
model.load_state_dict(torch.load("diffusion.pt", weights_only=True))
model.eval()
torch.save(model.sample(16), "samples.pt")
