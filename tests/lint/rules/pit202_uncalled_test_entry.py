"""In a file that trains, a module-level test() or predict() that no project code calls is an entry
point of its own (USAD's testing(), run from a notebook; chenyuntc's test() run by fire): pure
inference, so its no_grad could be inference_mode. An uncalled module-level evaluate() (often called
from a training loop elsewhere) and a test() the training loop calls are left alone; a runner class's
uncalled sample() and evaluate() methods are entry points too (round nineteen), and so is an uncalled
module-level test_net(), with what only it calls (round twenty-three)."""
import torch
from torch import nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def testing(net, loader):
    results = []
    with torch.no_grad():  # info: PIT202
        for x in loader:
            results.append(net(x))
    return results


@torch.no_grad()  # info: PIT202
def predict(net, x):
    return net(x).argmax(1).tolist()


def evaluate(net, loader):
    with torch.no_grad():
        return [net(x).sum().item() for x in loader]


def test(net, x):
    with torch.no_grad():
        return net(x).mean().item()


for _ in range(3):
    loss = model(torch.randn(2, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.eval()
    print(test(model, torch.randn(2, 4)))
    model.train()


class Solver:
    """A runner whose train() trains and whose sample() and evaluate() a script elsewhere calls
    (StarGAN v2's solver, run by main.py in its 'sample' and 'eval' modes): nothing here calls them."""

    def __init__(self, net):
        self.net, self.ema = net, nn.Linear(4, 1)
        self.opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def train(self, loader):
        for x in loader:
            loss = self.net(x).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.average()

    @torch.no_grad()
    def average(self):  # called by train(): in place on the weights
        for p, q in zip(self.ema.parameters(), self.net.parameters()):
            p.lerp_(q, 0.01)

    @torch.no_grad()  # info: PIT202
    def sample(self, x):
        return self.ema(x).tolist()

    @torch.no_grad()  # info: PIT202
    def evaluate(self, loader):
        return sum(self.ema(x).sum().item() for x in loader)

    @torch.no_grad()
    def refresh(self):  # uncalled, but no sampling entry by its name
        return self.ema(torch.zeros(1, 4)).item()


def test_net(net, loader):
    # Point-MAE's test_net(), run by main.py --test: an entry point named test_*, and the voting it calls
    with torch.no_grad():  # info: PIT202
        acc = sum(net(x).argmax(1).eq(y).float().mean().item() for x, y in loader)
    return max(acc, test_vote(net, loader))


def test_vote(net, loader):
    with torch.no_grad():  # info: PIT202
        return sum(net(x).softmax(1).max().item() for x, _ in loader)
