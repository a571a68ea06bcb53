import math

import torch


def to_scalar(var):
    return var.view(-1).data.tolist()[0]  # an element of a list: a number


class TrainState:
    def __init__(self):
        self.step = 0


def run_epoch(batches, model, optimizer, train_state):
    total = 0.0
    for x, y in batches:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train_state.step += 1
        total += to_scalar(loss)
    return total / max(len(batches), 1), train_state


def trunc_normal_(tensor, mean=0.0, std=1.0):
    with torch.no_grad():  # in place on what it is given: an initialiser, inference_mode would be wrong
        tensor.uniform_(-1, 1)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        return tensor
