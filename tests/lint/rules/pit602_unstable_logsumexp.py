import torch
import torch.nn.functional as F


def scores(x):
    a = torch.log(torch.exp(x).sum(dim=-1))  # error: PIT602
    b = x.exp().sum(1, keepdim=True).log()  # error: PIT602
    c = torch.log(torch.softmax(x, dim=-1))  # error: PIT602
    d = torch.log(F.softmax(x, 1))  # error: PIT602
    e = torch.logsumexp(x, dim=-1)
    f = torch.log(x.sum(-1))
    return a, b, c, d, e, f


def shifted_by_hand(x):
    m = x.amax(-1, keepdim=True)
    return m + (x - m).exp().sum(-1, keepdim=True).log()  # the stable form: no finding
