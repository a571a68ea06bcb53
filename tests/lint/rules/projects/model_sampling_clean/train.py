import torch

from diffusion import Diffusion, Teacher

model, teacher = Diffusion(), Teacher()
optimizer = torch.optim.Adam(model.parameters())
for step in range(10):
    x = teacher.encode(torch.randn(16, 8))
    optimizer.zero_grad()
    model(x).backward()
    optimizer.step()
torch.save(model.state_dict(), "diffusion.pt")
