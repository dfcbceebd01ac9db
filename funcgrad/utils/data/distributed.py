"""``funcgrad.utils.data.distributed``: ``DistributedSampler`` (PyTorch's index order: a
``Generator`` seeded with ``seed + epoch``, ``randperm``, padded or trimmed, then every
``num_replicas``-th index from ``rank``)."""

from __future__ import annotations

import math
from typing import Iterator, TypeVar

import jax

from ... import _random
from ..._random import _sample
from .sampler import Sampler

T_co = TypeVar("T_co", covariant=True)

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[T_co]):
    """The share of a dataset's indices one of ``num_replicas`` processes reads.

    >>> from funcgrad.utils.data.distributed import DistributedSampler
    >>> list(DistributedSampler(range(10), num_replicas=3, rank=0, shuffle=False))
    [0, 3, 6, 9]
    >>> list(DistributedSampler(range(10), num_replicas=3, rank=2, seed=1))
    [1, 8, 7, 6]
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        # the defaults are funcgrad.distributed's world size and rank, which are JAX's process
        # count and index (read from jax here: utils sits below funcgrad.distributed)
        if num_replicas is None:
            num_replicas = jax.process_count()
        if rank is None:
            rank = jax.process_index()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T_co]:
        if self.shuffle:
            g = _random.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = _sample.randperm(g, len(self.dataset)).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match num_samples "
                                 f"({self.num_samples})")
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with ``shuffle=True`` each epoch gets its own order."""
        self.epoch = epoch
