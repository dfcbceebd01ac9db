"""Samplers: which dataset indices a DataLoader reads, in which order, in which batches.

PyTorch's classes, messages and draws: ``RandomSampler`` seeds a private generator from one
``random_()`` of the global generator per pass (unless given ``generator``), then takes
``randperm`` (or ``randint`` in chunks of 32, lazily, with replacement) from it, so the orders
equal PyTorch's after the same ``manual_seed``.
"""

from __future__ import annotations

import itertools
from typing import Generic, Iterable, Iterator, Sequence, Sized, TypeVar

import numpy as np

from ... import _dtype, _factories
from ..._tensor import Tensor
from ... import _random
from ..._random import _sample
from ._rng import seed_from

T_co = TypeVar("T_co", covariant=True)

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler(Generic[T_co]):
    """Base class: subclasses implement ``__iter__`` (and ``__len__`` when they know it)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """Indices ``0 .. len(data_source) - 1`` in order.

    >>> from funcgrad.utils.data import SequentialSampler
    >>> list(SequentialSampler(range(3)))
    [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Random order without replacement (a permutation, repeated to reach ``num_samples``),
    or ``num_samples`` draws with replacement.

    >>> import funcgrad
    >>> from funcgrad.utils.data import RandomSampler
    >>> list(RandomSampler(range(6), generator=funcgrad.Generator().manual_seed(0)))
    [2, 5, 3, 0, 1, 4]
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if self.generator is None:
            generator = _random.Generator().manual_seed(seed_from(None))
        else:
            generator = self.generator
        if self.replacement:  # lazily, 32 at a time: num_samples may be huge
            for _ in range(self.num_samples // 32):
                yield from np.asarray(_sample.random_int(generator, (32,), np.int64, 0, n)).tolist()
            yield from np.asarray(_sample.random_int(generator, (self.num_samples % 32,), np.int64, 0,
                                                     n)).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _sample.randperm(generator, n).tolist()
            yield from _sample.randperm(generator, n).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices, in a random order (without replacement)."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _sample.randperm(self.generator, len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    >>> import funcgrad
    >>> from funcgrad.utils.data import WeightedRandomSampler
    >>> list(WeightedRandomSampler([0.1, 0.9, 0.4], 5, generator=funcgrad.Generator().manual_seed(0)))
    [2, 1, 1, 2, 1]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.asarray(weights.detach().numpy() if isinstance(weights, Tensor) else weights,
                       dtype=np.float64)
        if w.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(w.shape)}")
        self.weights = _factories.tensor(w, dtype=_dtype.float64)
        self._w = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        w = self._w
        if (w < 0).any() or not np.isfinite(w).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        total = w.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > len(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        yield from _factories.multinomial(self.weights, self.num_samples, self.replacement,
                                          generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    >>> from funcgrad.utils.data import BatchSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*([sampler_iter] * self.batch_size)):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
