"""Round twenty-five: in a script that trains, a no_grad block in a test-only branch (``if args.test:``,
``if args.do_test:``) is inference when the branch trains nothing and nothing trains after it: it
ends the run (PlaNet's ``quit()``) or is the script's last part (a BERT NER ``main()``'s prediction
step). A branch on ``not args.test``, one the training after it follows, and one inside the loop
that trains are left alone. A buffer the function makes and fills with results
(``pred[i:j].copy_(out)``, ban-vqa) is no weight loaded in place."""
import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--test", action="store_true")
parser.add_argument("--do_test", action="store_true")
args = parser.parse_args()
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

if args.test:
    model.eval()
    with torch.no_grad():  # info: PIT202
        print(model(torch.randn(3, 4)).argmax(1).tolist())
    quit()

if args.do_test:
    with torch.no_grad():  # no exit: the training below follows this branch
        print(model(torch.randn(3, 4)).sum().item())

if not args.test:
    with torch.no_grad():
        model.weight.mul_(0.5)


def main():
    for step in range(3):
        loss = model(torch.randn(2, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.test:
            with torch.no_grad():  # in the loop that trains
                print(model(torch.randn(2, 4)).mean().item())
    if args.do_test:
        model.eval()
        with torch.no_grad():  # info: PIT202
            labels = model(torch.randn(5, 4)).argmax(1).tolist()
        print(labels)


def gather(net, batches):
    pred = torch.FloatTensor(len(batches) * 2, 2).zero_()
    with torch.no_grad():  # info: PIT202
        for i, x in enumerate(batches):
            pred[2 * i:2 * i + 2].copy_(net(x))
    return pred


def flatten(net):
    flat = torch.empty(sum(p.numel() for p in net.parameters()))
    offset = 0
    for params in net.parameters():
        with torch.no_grad():  # copies weights out (MOON's get_trainable_values): no forward to speed up
            flat[offset:offset + params.numel()].copy_(params.data.view(-1))
        offset += params.numel()
    return flat


def average_into(net, ema):
    with torch.no_grad():
        for p, q in zip(ema.parameters(), net.parameters()):
            p.copy_(q)


if __name__ == "__main__":
    main()
    print(gather(model, [torch.randn(2, 4)]).sum().item())
    print(flatten(model).norm().item())
    average_into(model, nn.Linear(4, 2))  # copies into weights: no inference
