import sys

import torch
from runner import Runner


def main():
    runner = Runner(torch.nn.Linear(8, 8), [torch.randn(4, 8)])
    if "--sample" in sys.argv:
        print(runner.sample())
    else:
        runner.train()


if __name__ == "__main__":
    main()
