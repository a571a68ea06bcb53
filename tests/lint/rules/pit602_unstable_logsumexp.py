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

    def next_scores(self, dec_output, scores, k):
        best_k2_probs, best_k2_idx = dec_output[:, -1, :].topk(k)  # dec_output: what every caller passes
        return torch.log(best_k2_probs).view(k, -1) + scores  # error: PIT602

    def mixed_scores(self, out, k):
        top, _ = out.topk(k)
        return torch.log(top)  # one caller passes a softmax, the other logits: not certain, no finding

    def search(self, x, k):
        dec_output = self.decode(x)
        scores, _ = self.first_scores(x, k)
        self.mixed_scores(self.decode(x), k)
        self.mixed_scores(self.logits(x), k)
        return self.next_scores(dec_output, scores, k)


def positive_scores(p):
    return torch.log(p)  # a log() helper: its caller's sigmoid is reported there


def run_positive(logits):
    return positive_scores(torch.sigmoid(logits))  # error: PIT602


def two_gaussians(z):
    # a two-term logsumexp written out: exp of each term, added, then the log
    return torch.log(torch.exp(-0.5 * ((z - 2) / 0.6) ** 2) + torch.exp(-0.5 * ((z + 2) / 0.6) ** 2) + 1e-10)  # warning: PIT602


def two_gaussians_shifted(a, b):
    m = torch.maximum(a, b)
    return m + torch.log(torch.exp(a - m) + torch.exp(b - m))  # shifted by hand: the stable form


def one_term(a):
    return torch.log(torch.exp(a) + 1e-10)  # a single exp: no sum to rewrite


class Contrastive(torch.nn.Module):
    def __init__(self, tau):
        super().__init__()
        self.tau = tau
        self.softmax = torch.nn.Softmax(dim=1)

    def info_nce(self, z1, z2):
        f = lambda x: torch.exp(x / self.tau)  # noqa: E731
        refl, between = f(z1 @ z1.t()), f(z1 @ z2.t())
        return -torch.log(between.diag() / (refl.sum(1) + between.sum(1) - refl.diag()))  # warning: PIT602

    def masked(self, sim, pos, mask):
        numerator = torch.exp(pos / self.tau)
        denominator = mask * torch.exp(sim / self.tau)
        return -torch.log(numerator / torch.sum(denominator, dim=1))  # warning: PIT602

    def shifted(self, sim, pos):
        m = sim.max(1, keepdim=True)[0]
        return -torch.log(torch.exp(pos - m) / torch.exp(sim - m).sum(1))  # shifted by hand: the stable form

    def ratio_of_counts(self, hits, total):
        return torch.log(hits / total.sum())  # no exp: a ratio of counts, no finding

    def module_softmax(self, scores):
        probs = self.softmax(scores)
        return (probs[:, 0] + 1e-6).log()  # warning: PIT602

    def sigmoid_module(self, scores):
        return torch.log(torch.sigmoid(scores))  # error: PIT602 (a two-term logsumexp: F.logsigmoid)


def bce_by_hand(pos_logits, neg_logits, istarget):
    # S3Rec's cross-entropy over dot-product logits: -inf once a sigmoid rounds to 0 or 1
    loss = -torch.log(torch.sigmoid(pos_logits) + 1e-24) * istarget  # error: PIT602
    loss = loss - torch.log(1 - torch.sigmoid(neg_logits) + 1e-24) * istarget  # error: PIT602
    p = neg_logits.sigmoid()
    return loss, (1 - p).log()  # error: PIT602


def bce_stable(pos_logits, neg_logits, pred):
    a = -F.logsigmoid(pos_logits) - F.logsigmoid(-neg_logits)  # the stable forms
    p = torch.sigmoid(pred).clamp(1e-7, 1 - 1e-7)
    b = torch.log(p) + torch.log(1 - p)  # clamped first: bounded, no finding
    c = torch.log(torch.sigmoid(pred).clamp(min=1e-7))  # clamped inline: no finding
    return a, b, c


def cox_partial_likelihood(risk_pred, y, e):
    # DeepSurv's loss: a masked sum of exp over each risk set, averaged, then logged (the name rebound)
    mask = torch.ones(y.shape[0], y.shape[0])
    mask[(y.T - y) > 0] = 0
    log_loss = torch.exp(risk_pred) * mask
    log_loss = torch.sum(log_loss, dim=0) / torch.sum(mask, dim=0)
    log_loss = torch.log(log_loss).reshape(-1, 1)  # warning: PIT602
    inline = torch.log(torch.sum(torch.exp(risk_pred) * mask, dim=0))  # warning: PIT602
    return -torch.sum((risk_pred - log_loss) * e) / torch.sum(e) + inline.mean()


def cox_shifted(risk_pred, mask):
    m = risk_pred.max()
    shifted = torch.exp(risk_pred - m) * mask
    return m + torch.log(torch.sum(shifted, dim=0) / torch.sum(mask, dim=0))  # shifted by hand: stable


def supervised_contrastive(dot_product, logits_mask):
    # SCAN's SimCLR loss: the logits shifted by their max on a line of their own, then exp, masked, summed
    logits_max, _ = torch.max(dot_product, dim=1, keepdim=True)
    logits = dot_product - logits_max.detach()
    exp_logits = torch.exp(logits) * logits_mask
    return logits - torch.log(exp_logits.sum(1, keepdim=True))  # shifted by hand: stable


def rebound_probabilities(logits, counts):
    p = torch.softmax(logits, -1)
    p = counts / counts.sum()  # rebound to a ratio of counts before the log
    return torch.log(p)
