"""Length-bucketed batching: fewer padded tokens, every index once per epoch, deterministic,
shardable for DDP."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import Sampler

from pitstop.errors import UsageError


class LengthBucketSampler(Sampler[list[int]]):
    """A ``batch_sampler`` that groups samples of similar length.

    Each epoch: the indices are shuffled (seeded by ``seed + epoch``), cut into mega-buckets of
    ``batch_size * mega_batches`` samples, sorted by length inside each mega-bucket (so batches
    stay random across the epoch while lengths within a batch are close), cut into batches, and
    the batch order is shuffled. Every index appears exactly once per epoch; only the last batch
    can be short, and ``drop_last`` drops it.

    Sharding (``num_replicas``/``rank``, defaulting to torch.distributed's when it is initialised):
    every rank computes the same batch list and takes every ``num_replicas``-th batch, so ranks
    get the same number of batches. With ``drop_last`` the shards are disjoint (the batches that
    do not divide evenly are dropped); without it, the first batches are repeated to even them
    out, as ``DistributedSampler`` pads indices."""

    def __init__(self, lengths: Sequence[int] | torch.Tensor, batch_size: int, *, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False, mega_batches: int = 50, num_replicas: int | None = None,
                 rank: int | None = None) -> None:
        self.lengths = [int(x) for x in (lengths.tolist() if isinstance(lengths, torch.Tensor) else lengths)]
        if batch_size < 1:
            raise UsageError(f"batch_size must be positive, got {batch_size}")
        if mega_batches < 1:
            raise UsageError(f"mega_batches must be positive, got {mega_batches}")
        if any(x < 0 for x in self.lengths):
            raise UsageError("lengths must be non-negative")
        if num_replicas is None or rank is None:
            world, me = _dist()
            num_replicas = world if num_replicas is None else num_replicas
            rank = me if rank is None else rank
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise UsageError(f"rank must be in [0, num_replicas), got rank {rank} of {num_replicas}")
        self.batch_size, self.shuffle, self.seed, self.drop_last = batch_size, shuffle, seed, drop_last
        self.mega_batches, self.num_replicas, self.rank = mega_batches, num_replicas, rank
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """A different (deterministic) order for each epoch; call it before iterating, on every rank."""
        self.epoch = epoch

    def batches(self) -> list[list[int]]:
        """Every rank's batches for this epoch (before sharding)."""
        n = len(self.lengths)
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(n, generator=g).tolist() if self.shuffle else list(range(n))
        size = self.batch_size * self.mega_batches
        ranked: list[int] = []
        for start in range(0, n, size):
            chunk = order[start:start + size]
            ranked += sorted(chunk, key=lambda i: self.lengths[i], reverse=True)  # stable: ties keep the order
        batches = [ranked[i:i + self.batch_size] for i in range(0, n, self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        if self.shuffle:
            perm = torch.randperm(len(batches), generator=g).tolist()
            batches = [batches[i] for i in perm]
        return batches

    def _shard(self, batches: list[list[int]]) -> list[list[int]]:
        r = self.num_replicas
        if r == 1:
            return batches
        if self.drop_last:
            batches = batches[: len(batches) - len(batches) % r]
        elif batches and len(batches) % r:
            extra = r - len(batches) % r
            batches = batches + [batches[i % len(batches)] for i in range(extra)]
        return batches[self.rank::r]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self._shard(self.batches()))

    def __len__(self) -> int:
        full, rest = divmod(len(self.lengths), self.batch_size)
        total = full + (1 if rest and not self.drop_last else 0)
        if self.num_replicas == 1:
            return total
        return total // self.num_replicas if self.drop_last else math.ceil(total / self.num_replicas)


def _dist() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_world_size(), torch.distributed.get_rank()
    return 1, 0


def padding_waste(lengths: Sequence[int] | torch.Tensor, batches: Iterable[Sequence[int]] | Any) -> float:
    """Share of padded tokens when each batch is padded to its longest sample:
    ``sum(max_len * size - sum(lengths)) / sum(max_len * size)``. ``batches`` is a batch sampler
    (``LengthBucketSampler``, ``BatchSampler``) or any iterable of index lists."""
    lens = lengths.tolist() if isinstance(lengths, torch.Tensor) else list(lengths)
    padded = real = 0
    for batch in batches:
        sizes = [int(lens[i]) for i in batch]
        if sizes:
            padded += max(sizes) * len(sizes)
            real += sum(sizes)
    return 0.0 if padded == 0 else (padded - real) / padded
