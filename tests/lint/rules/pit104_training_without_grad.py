import torch
from torch import no_grad


def loss_under_no_grad(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        with torch.no_grad():
            loss = crit(model(x), y)  # error: PIT104
        loss.backward()
        opt.step()


@torch.inference_mode()
def decorated(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        loss = crit(model(x), y)  # error: PIT104
        loss.backward()
        opt.step()


def aliased(model, loader, opt, crit):
    for x, y in loader:
        opt.zero_grad()
        with no_grad():
            target = model(x).argmax(-1)  # a no_grad pseudo-label: fine
        loss = crit(model(x), target)
        loss.backward()
        opt.step()
