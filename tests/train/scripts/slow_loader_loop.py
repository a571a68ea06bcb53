"""A training loop that waits for its data: each sample is "decoded" (a 1.5 ms wait, as a file read
or a JPEG decode would take) and augmented with a random shift drawn from torch's global generator,
in a DataLoader without workers, epochs over a map-style Dataset. --iterable streams the same
samples from an IterableDataset (which worker processes would each yield in full). After training, a
held-out evaluation through a second DataLoader over the same Dataset class, built beside the first."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, IterableDataset


class Decoded(Dataset):
    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, 32, generator=g)
        self.y = self.x[:, :4].argmax(dim=1)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        time.sleep(0.0015)  # the decode
        return self.x[i] + 0.01 * torch.randn(32), self.y[i]  # the augmentation


class Streamed(IterableDataset):
    def __init__(self, n: int) -> None:
        self.items = Decoded(n)

    def __iter__(self):
        for i in range(len(self.items)):
            yield self.items[i]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=640)
    parser.add_argument("--iterable", action="store_true")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    torch.manual_seed(0)
    data = Streamed(args.samples) if args.iterable else Decoded(args.samples)
    loader = DataLoader(data, batch_size=16, shuffle=not args.iterable)
    held_out = DataLoader(Decoded(48), batch_size=16)  # the evaluation's: the same per-sample work
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)).to(args.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _epoch in range(args.epochs):
        for x, y in loader:
            x = x.to(args.device)
            y = y.to(args.device)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
    with torch.no_grad():
        val = [nn.functional.cross_entropy(model(x.to(args.device)), y.to(args.device)).item() for x, y in held_out]
    print(f"final loss {loss.item():.4f} held-out loss {sum(val) / len(val):.4f}")


if __name__ == "__main__":
    main()
