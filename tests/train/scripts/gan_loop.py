"""A GAN step as pytorch/examples/dcgan writes one: two models, two optimizers, three forwards
and two backwards per step (D on real data, G then D on fakes, D again for G's loss), and now and
then a sample from G after the step (a forward that leads to no backward)."""

import sys

import torch
from torch import nn


def main() -> None:
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    torch.manual_seed(0)
    netG = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32))
    netD = nn.Sequential(nn.Linear(32, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
    criterion = nn.BCEWithLogitsLoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real_data = torch.randn(512, 32) * 0.5 + 1.0
    fixed_noise = torch.randn(8, 16)
    for step in range(iters):
        real = real_data[step * 32 % 512:][:32]
        # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        output = netD(real)
        errD_real = criterion(output, torch.ones_like(output))
        errD_real.backward()
        noise = torch.randn(32, 16)
        fake = netG(noise)
        output = netD(fake.detach())
        errD_fake = criterion(output, torch.zeros_like(output))
        errD_fake.backward()
        optimizerD.step()
        # (2) update G: maximize log(D(G(z)))
        netG.zero_grad()
        output = netD(fake)
        errG = criterion(output, torch.ones_like(output))
        errG.backward()
        optimizerG.step()
        if step % 100 == 0:  # dcgan saves sample images: G on fixed noise, with autograd on
            fake = netG(fixed_noise)
    print(f"done {errG.item():.4f}")


if __name__ == "__main__":
    main()
