import torch

from nets import Painter

gen = Painter()
z = torch.randn(4, 8)
with torch.inference_mode():
    picture = gen(z)
print(picture.tolist())
