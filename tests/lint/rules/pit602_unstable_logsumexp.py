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


class Beam:
    def __init__(self, model):
        self.model = model

    def decode(self, x):
        return F.softmax(self.model(x), dim=-1)

    def logits(self, x):
        return self.model(x)

    def first_scores(self, x, k):
        probs = self.decode(x)  # a method that returns a softmax
        best_probs, best_idx = probs[:, -1, :].topk(k)
        return torch.log(best_probs), best_idx  # error: PIT602

    def stable_scores(self, x, k):
        best, idx = self.logits(x)[:, -1, :].log_softmax(-1).topk(k)  # logits: the stable form
        top, _ = self.logits(x).topk(k)
        return best, idx, torch.log(top)  # a log of raw logits' top-k: not a softmax, no finding
