"""``--num-workers`` declared with default=4: the training loader in data.py has workers."""
import argparse

import torch
from data import make_loaders


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-workers", type=int, default=4)
    args = parser.parse_args()
    model = torch.nn.Linear(8, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader, _ = make_loaders(args, torch.randn(64, 8), torch.randn(16, 8))
    for x in train_loader:
        loss = model(x.cuda()).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
