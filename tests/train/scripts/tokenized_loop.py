"""A text-classification loop whose Dataset tokenises each text in ``__getitem__`` (pure Python
work on one core, the same result every epoch, no random draw), epochs over a DataLoader without
workers: the shape of a loop that an item cache speeds up from its second epoch on. The evaluation
reads a second Dataset of the same class through its own DataLoader. --state gives the Dataset a
``set_epoch`` that changes what ``__getitem__`` reads (a curriculum: its items may change between
epochs, so they are never cached)."""

import argparse
import zlib

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

VOCAB, LENGTH = 512, 32


class Texts(Dataset):
    def __init__(self, n: int, seed: int, words: int = 600) -> None:
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, 5000, (n, words), generator=g)
        self.texts = [" ".join(f"w{int(i)}" for i in row) for row in ids]
        self.labels = [int(row[:8].sum()) % 4 for row in ids]
        self.max_len = LENGTH

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: int):
        tokens = [zlib.crc32(word.encode()) % VOCAB for word in self.texts[i].split()]  # the tokeniser's work
        counts = torch.bincount(torch.tensor(tokens), minlength=VOCAB).float()
        return counts / len(tokens), torch.tensor(self.labels[i])


class Curriculum(Texts):
    def __init__(self, n: int, seed: int) -> None:
        super().__init__(n, seed)
        self.scale = 1.0

    def set_epoch(self, epoch: int) -> None:
        self.scale = 1.0 + 0.1 * epoch

    def __getitem__(self, i: int):
        x, y = super().__getitem__(i)
        return x * self.scale, y


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=320)
    parser.add_argument("--state", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    data = Curriculum(args.samples, 1) if args.state else Texts(args.samples, 1)
    loader = DataLoader(data, batch_size=16, shuffle=True)
    held_out = DataLoader(Texts(32, 2), batch_size=16)
    model = nn.Sequential(nn.Linear(VOCAB, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for epoch in range(args.epochs):
        if args.state:
            data.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        with torch.no_grad():
            val = [nn.functional.cross_entropy(model(x), y).item() for x, y in held_out]
    print(f"final loss {loss.item():.6f} held-out loss {sum(val) / len(val):.6f}")


if __name__ == "__main__":
    main()
