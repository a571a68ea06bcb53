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
