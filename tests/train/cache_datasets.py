"""Datasets for the item cache's check (tests/train/test_item_cache.py): one whose items are fixed,
and one for each way a cache would change what trains."""

import torch
from torch.utils.data import Dataset, IterableDataset


class Fixed(Dataset):
    """Items made by work on the index alone: the same every time."""

    def __init__(self, n: int = 40) -> None:
        self.x = torch.arange(n * 8, dtype=torch.float32).reshape(n, 8)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        return {"x": self.x[i].sin(), "y": int(i) % 3, "name": f"item{i}"}


class Augmented(Fixed):
    def __getitem__(self, i: int):
        return self.x[i] + torch.randn(8)  # an augmentation: a draw from torch's global generator


class OwnGenerator(Fixed):
    def __init__(self) -> None:
        super().__init__()
        self.g = torch.Generator().manual_seed(0)

    def __getitem__(self, i: int):
        return self.x[i] + torch.rand(8, generator=self.g)  # its own generator: no global draw, another value


class Counting(Fixed):
    def __getitem__(self, i: int):
        self.calls = getattr(self, "calls", 0) + 1
        return self.x[i]


class Curriculum(Fixed):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 1.0

    def set_epoch(self, epoch: int) -> None:
        self.scale = 1.0 + epoch

    def __getitem__(self, i: int):
        return self.x[i] * self._scale()

    def _scale(self) -> float:
        return self.scale


class Unhashable(Fixed):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unhashable)


class Streamed(IterableDataset):
    def __iter__(self):
        yield from Fixed()


class Large(Fixed):
    def __getitem__(self, i: int):
        return torch.zeros(256, 1024)  # 1 MiB an item
