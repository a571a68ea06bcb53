import torch


def evaluate(model, loader):  # error: PIT109
    with torch.no_grad():  # info: PIT202
        return [model(x).argmax(-1) for x, _ in loader]


def validate(model, loader):  # no project code calls it: the mode it runs in is its caller's, no finding
    with torch.no_grad():  # info: PIT202
        return [model(x).argmax(-1) for x, _ in loader]


model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1))  # built in training mode
print(evaluate(model, [(torch.randn(2, 4), None)]))
