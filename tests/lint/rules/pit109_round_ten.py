"""PIT109 and PIT201 shapes from issue 48's tenth round: an evaluation helper that builds and loads its
own model (its eval() is not the trained model's), a teacher put in eval mode and run only under
no_grad, an attack that deep-copies the model before eval() and whose last forward feeds the next
iteration's backward; and the helper that does switch the trained model, which stays a finding."""
from copy import deepcopy

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc(self.drop(x))


def evaluate(path, x):
    net = Net()
    net.load_state_dict(torch.load(path, weights_only=True))
    net.eval()
    with torch.inference_mode():
        return net(x).argmax(1).tolist()


def validate(model, x):
    model.eval()
    with torch.inference_mode():
        return model(x).argmax(1).tolist()


def attack(model, images, steps=4):
    model = deepcopy(model)
    model.eval()
    inputs = images.clone().requires_grad_(True)
    outputs = model(inputs)
    target = -outputs.detach()
    for _ in range(steps):
        loss = F.mse_loss(outputs, target)
        loss.backward()
        inputs = (inputs - 0.01 * inputs.grad.sign()).detach().requires_grad_(True)
        outputs = model(inputs)  # the next iteration's backward runs on it
    return inputs.detach()


def train(model, teacher, optimizer, loader):
    model.train()
    for step, (x, y) in enumerate(loader):
        teacher.eval()
        with torch.no_grad():
            soft = teacher(x)
        x_adv = attack(model, x)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x_adv), y) + F.mse_loss(model(x), soft)
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            torch.save(model.state_dict(), "cp.pth")
            print(evaluate("cp.pth", x))


def train_and_validate(model, optimizer, loader):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        print(validate(model, x))  # warning: PIT109
