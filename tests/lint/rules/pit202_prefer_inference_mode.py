import torch


def serve(model, batch):
    with torch.no_grad():  # info: PIT202
        return model(batch)


@torch.no_grad()  # info: PIT202
def embed(model, batch):
    return model(batch)


def already(model, batch):
    with torch.inference_mode():
        return model(batch)


def load_pretrained(model, weights):
    with torch.no_grad():  # copying weights in: not inference, inference_mode would be wrong
        for p, w in zip(model.parameters(), weights):
            p.copy_(w)


@torch.no_grad()
def init_weights(module):
    torch.nn.init.normal_(module.weight, std=0.02)


class ScaledGrad(torch.autograd.Function):  # autograd's own work: no inference in it
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x * 2)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (scale,) = ctx.saved_tensors
        with torch.no_grad():
            scale.mul_(grad)
        return scale


def neumann_vjp(g, x, v, n, coeff_fn):
    with torch.no_grad():  # the series is fed back to autograd.grad as grad_outputs
        for k in range(n):
            v = v + coeff_fn(k) * torch.autograd.grad(g, x, v, retain_graph=True)[0]
    return torch.autograd.grad(g, x, v, create_graph=True)[0]
