import torch

from models import create_model

model = create_model("pix2pix")
for _ in range(3):
    model.optimize(torch.randn(2, 4))
