import numpy as np
import torch

from models import create_model

model = create_model("pix2pix")
outs = [model.test(torch.randn(2, 4)).numpy() for _ in range(3)]
np.save("fake.npy", np.stack(outs))
