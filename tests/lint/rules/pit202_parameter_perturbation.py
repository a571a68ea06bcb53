"""DARTS' architect: no_grad around in-place updates of the weights it walks (w+ = w + eps * dw) and
around gradients written by hand (alpha.grad = ...); inference_mode would be wrong there. A loop
counter updated in place in an inference block changes nothing."""
import torch


def compute_hessian(net, dw, eps):
    with torch.no_grad():
        for p, d in zip(net.weights(), dw):
            p += eps * d
    with torch.no_grad():
        for alpha, da in zip(net.alphas(), dw):
            alpha.grad = da * eps


def predict(model, batches):
    outs = []
    with torch.no_grad():  # info: PIT202
        for i, x in enumerate(batches):
            i //= 2
            outs.append(model(x).argmax(1).tolist())
    return outs


def ema(m, m_target, tau):
    """TD-MPC's target update: in place on what it walks, named for neither weights nor parameters."""
    with torch.no_grad():
        for p, p_target in zip(m.parameters(), m_target.parameters()):
            p_target.data.lerp_(p.data, tau)
