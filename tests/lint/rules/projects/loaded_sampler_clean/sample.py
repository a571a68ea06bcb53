"""An inference script that loads trained weights and switches the model to eval mode."""
import torch

from model import Generator

netG = Generator()
netG.load_state_dict(torch.load("generator.pt", weights_only=True))
netG.eval()
with torch.inference_mode():
    images = netG(torch.randn(16, 8))
    more = netG.sample(16)
torch.save(torch.cat([images, more]), "samples.pt")
