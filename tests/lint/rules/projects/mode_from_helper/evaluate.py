# The evaluation script takes its model from a helper that leaves it in training mode.
import torch
from utils import get_model


def evaluate(model, batches):  # error: PIT109
    total = 0.0
    with torch.inference_mode():
        for x in batches:
            total += model(x).sum().item()
    return total


if __name__ == "__main__":
    net = get_model(train=False)
    print(evaluate(net, [torch.randn(2, 4)]))
