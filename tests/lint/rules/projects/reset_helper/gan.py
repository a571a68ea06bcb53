import itertools

import torch


def run(enc, dec, disc, loader, crit, noise):
    g_opt = torch.optim.Adam(itertools.chain(enc.parameters(), dec.parameters()))
    d_opt = torch.optim.Adam(disc.parameters())
    for x in loader:
        d_loss = crit(disc(x), disc(dec(noise())))
        d_loss.backward()
        d_opt.step()
        g_opt.step()
        g_loss = crit(disc(dec(enc(x))), 1)
        g_loss.backward()
        g_opt.step()  # error: PIT101
        reset_grad(enc, dec, disc)


def reset_grad(*models):
    for m in models:
        m.zero_grad()
