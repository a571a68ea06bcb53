"""Synthetic MNIST and FakeData: random uint8 images from a fixed seed (no download)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch


def _size(var: str, default: int) -> int:
    return int(os.environ.get(var, default))


class _Images(torch.utils.data.Dataset):
    def __init__(self, data: torch.Tensor, targets: torch.Tensor, transform: Callable[..., Any] | None,
                 target_transform: Callable[..., Any] | None) -> None:
        self.data, self.targets = data, targets
        self.transform, self.target_transform = transform, target_transform

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


class MNIST(_Images):
    """28x28 uint8 digits (N, 28, 28) and labels 0-9; train and test sets differ by seed."""

    def __init__(self, root: str, train: bool = True, transform: Callable[..., Any] | None = None,
                 target_transform: Callable[..., Any] | None = None, download: bool = False) -> None:
        n = _size("PITSTOP_FAKE_MNIST_TRAIN", 640) if train else _size("PITSTOP_FAKE_MNIST_TEST", 200)
        gen = torch.Generator().manual_seed(0 if train else 1)
        data = torch.randint(0, 256, (n, 28, 28), dtype=torch.uint8, generator=gen)
        super().__init__(data, torch.randint(0, 10, (n,), generator=gen), transform, target_transform)


class FakeData(_Images):
    """Random (H, W, C) uint8 images, like torchvision.datasets.FakeData."""

    def __init__(self, size: int = 1000, image_size: tuple[int, int, int] = (3, 224, 224), num_classes: int = 10,
                 transform: Callable[..., Any] | None = None, target_transform: Callable[..., Any] | None = None,
                 random_offset: int = 0) -> None:
        size = _size("PITSTOP_FAKE_DATA_SIZE", size)
        c, h, w = image_size
        gen = torch.Generator().manual_seed(random_offset)
        data = torch.randint(0, 256, (size, h, w, c), dtype=torch.uint8, generator=gen)
        super().__init__(data, torch.randint(0, num_classes, (size,), generator=gen), transform, target_transform)
