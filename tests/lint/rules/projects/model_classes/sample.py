import torch

from nets import Painter

gen = Painter()
z = torch.randn(4, 8)
picture = gen(z)  # error: PIT201
print(picture.tolist())
