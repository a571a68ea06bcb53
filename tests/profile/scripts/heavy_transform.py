"""planted: input-bound. A heavy per-sample transform computed in __getitem__ (num_workers=0)."""
import torch
from _common import forward, setup, steps


class Augmented(torch.utils.data.Dataset):
    def __len__(self):
        return 32 * steps()

    def __getitem__(self, i):
        img = torch.randn(64, 64)
        for _ in range(4):  # an augmentation pipeline done by hand
            img = torch.fft.ifft2(torch.fft.fft2(img)).real
        return img.flatten()[:256], i % 10


model, opt = setup()
for x, y in torch.utils.data.DataLoader(Augmented(), batch_size=32):
    opt.zero_grad()
    forward(model, x, y).backward()
    opt.step()
