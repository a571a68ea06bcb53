"""planted: input-bound. Each sample is "decoded" slowly in the main process (num_workers=0)."""
import time

import torch
from _common import forward, setup, steps


class Decoded(torch.utils.data.Dataset):
    def __len__(self):
        return 32 * steps()

    def __getitem__(self, i):
        time.sleep(0.0005)  # a slow decode
        return torch.randn(256), i % 10


model, opt = setup()
for x, y in torch.utils.data.DataLoader(Decoded(), batch_size=32):
    opt.zero_grad()
    forward(model, x, y).backward()
    opt.step()
