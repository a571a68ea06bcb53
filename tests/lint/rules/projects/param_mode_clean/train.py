import torch

from model import Seq2Seq


def eval_dev(model, ldr):
    model.set_eval()  # the model is a parameter here: its class is not known in this file
    correct = 0
    with torch.no_grad():
        for x, y in ldr:
            correct += (model(x).argmax(1) == y).sum().item()
    model.set_train()
    return correct


MODELS = {"seq2seq": Seq2Seq}


def run(name, ldr, dev_ldr):
    model = MODELS[name]()  # built from a registry: its class is not known at the call either
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(10):
        for x, y in ldr:
            loss = model.loss(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(eval_dev(model, dev_ldr))
