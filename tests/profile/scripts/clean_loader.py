"""clean: the MLP fed by a DataLoader over tensors in memory (the data wait is small)."""
import torch
from _common import forward, setup, steps

model, opt = setup()
data = torch.utils.data.TensorDataset(torch.randn(128 * steps(), 256), torch.randint(0, 10, (128 * steps(),)))
for x, y in torch.utils.data.DataLoader(data, batch_size=128):
    opt.zero_grad()
    forward(model, x, y).backward()
    opt.step()
