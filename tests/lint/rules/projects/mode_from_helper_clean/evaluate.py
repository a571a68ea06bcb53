# The helper returns the model in eval mode when asked for one to evaluate (train=False): the mode
# depends on the argument, so the linter does not call it training mode.
import torch
from utils import get_model


def evaluate(model, batches):
    total = 0.0
    with torch.inference_mode():
        for x in batches:
            total += model(x).sum().item()
    return total


if __name__ == "__main__":
    net = get_model(train=False)
    print(evaluate(net, [torch.randn(2, 4)]))
