# Models and the objects around them as real scripts build them: a model built with a chained
# `.to(device)` is still its class, under an upper-case name (a style-transfer script's `VGG`); a
# project object that is no model (a federated client's updater) has methods, not inference calls
# (its own method is the finding); a module method that opens no_grad itself, a model whose forward
# trains itself (meta-learning) and a module without weights (a PSNR metric) leave no graph unused.
import torch
import torch.nn as nn


class Features(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return self.conv(x)


class PSNR(nn.Module):
    def __init__(self, peak):
        super().__init__()
        self.peak = peak

    def forward(self, a, b):
        return 10 * torch.log10(self.peak ** 2 / ((a - b) ** 2).mean())


class Translator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    def translate(self, x):
        assert x.size(0) == 1
        with torch.no_grad():
            out = self.net(x)
        return out.argmax(-1).tolist()


class Meta(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 2)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def forward(self, x, y):
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


class LocalUpdate:
    def __init__(self, data):
        self.data = data

    def inference(self, model):  # warning: PIT201
        model.eval()
        correct = 0
        for x, y in self.data:
            out = model(x)
            correct += (out.argmax(1) == y).sum().item()
        return correct


def train(loader, device):
    VGG = Features().to(device)
    opt = torch.optim.Adam(VGG.parameters())
    total = 0
    for x in loader:
        opt.zero_grad()
        loss = VGG(x).pow(2).mean()
        total += loss  # error: PIT102
        loss.backward()
        opt.step()
    print(float(total))


def evaluate(data, net, low, high, x):
    local_model = LocalUpdate(data)
    correct = local_model.inference(model=net)
    net.eval()
    psnr = PSNR(1.0).to("cpu")
    with torch.no_grad():
        pred = net(low)
    score = psnr(pred, high).item()
    translator = Translator().to("cpu")
    translator.eval()
    words = translator.translate(x)
    maml = Meta().to("cpu")
    accs = maml(x, torch.zeros(1, dtype=torch.long))
    print(correct, score, words, accs)
