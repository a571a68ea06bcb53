"""Round twenty-six (OpenAI's phasic policy gradient): a project's own alias of no_grad
(``no_grad = contextmanager_to_decorator(th.no_grad)`` in torch_util) decorates the value head's
``v()``, so calling it records nothing; a plain ``pi()`` evaluated for numbers does."""
import torch
import torch_util as tu
from torch import nn
from utils import inference_mode


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.value = nn.Linear(4, 1)

    def forward(self, x):
        return self.value(torch.relu(self.body(x)))

    @tu.no_grad
    def v(self, x):
        return self(x)

    @inference_mode
    def probs(self, x):
        return self.body(x).softmax(-1)

    def pi(self, x):
        return self.body(x)


def report(model, x):
    return model.v(x).mean().item(), model.probs(x).max().item()


def report_logits(model, x):  # warning: PIT201
    return model.pi(x).mean().item()


def make_nograd_func(func):
    """MVSNet's decorator: the wrapped function runs under no_grad."""
    def wrapper(*args, **kwargs):
        with torch.no_grad():  # info: PIT202
            return func(*args, **kwargs)
    return wrapper


@make_nograd_func
def test_sample(model, x):
    return model(x).mean()


def test(model, batches, meter):
    for x in batches:
        meter.update(test_sample(model, x))


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


def accuracy(scores, targets):
    return (scores.argmax(1) == targets).float().mean() * 100


def validate(model, batches):  # warning: PIT201
    # round twenty-six (show-attend-tell): a project meter's update() trains nothing, whatever its name
    top1 = AverageMeter()
    hits = 0
    for x, y in batches:
        scores = model(x)
        top1.update(accuracy(scores, y), x.size(0))
        hits += int(scores.argmax(1).eq(y).sum())
    print(top1.sum / top1.count)
    return hits
