"""Datasets: map-style ``Dataset`` and stream-style ``IterableDataset``, and their combinators.

Same classes, signatures and error messages as ``torch.utils.data``. ``TensorDataset`` and
``Subset`` also offer ``_collated_batch(indices)``, which the ``DataLoader`` uses when the
collate function is the default one: the whole batch is gathered with one indexing op per
tensor instead of one op per sample plus a stack.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Generic, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from ..._tensor import Tensor
from ..._random import _sample

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses implement ``__getitem__`` (and usually ``__len__``).

    >>> from funcgrad.utils.data import Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self): return 4
    ...     def __getitem__(self, i): return i * i
    >>> [Squares()[i] for i in range(4)]
    [0, 1, 4, 9]
    """

    def __getitem__(self, index) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset[T_co]") -> "ConcatDataset[T_co]":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A stream-style dataset: subclasses implement ``__iter__``.

    With ``num_workers > 0`` funcgrad's DataLoader still runs a single producer (a thread), so
    ``get_worker_info()`` reports ``num_workers == 1`` there and no sharding is needed.

    >>> from funcgrad.utils.data import IterableDataset
    >>> class Count(IterableDataset):
    ...     def __iter__(self): return iter(range(3))
    >>> list(Count())
    [0, 1, 2]
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset[T_co]):
        return ChainDataset([self, other])


def _as_index(indices) -> np.ndarray:
    return np.asarray(indices, dtype=np.int64)


class TensorDataset(Dataset[tuple]):
    """Dataset wrapping tensors; sample ``i`` is ``tuple(t[i] for t in tensors)``.

    Args:
        *tensors: tensors that have the same size of the first dimension.

    >>> import funcgrad
    >>> from funcgrad.utils.data import TensorDataset
    >>> ds = TensorDataset(funcgrad.arange(6).view(3, 2), funcgrad.tensor([0, 1, 0]))
    >>> len(ds), ds[1]
    (3, (tensor([2, 3]), tensor(1)))
    """

    tensors: tuple

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)

    def _collated_batch(self, indices):
        """``default_collate([self[i] for i in indices])``, with one gather per tensor."""
        idx = _as_index(indices)
        n = len(self)
        if idx.size and (idx.max() >= n or idx.min() < -n):
            bad = int(idx.max()) if idx.max() >= n else int(idx.min())
            raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {n}")
        return [tensor[idx] for tensor in self.tensors]


class StackDataset(Dataset):
    """Zip datasets of equal length: samples are tuples (``*args``) or dicts (``**kwargs``)."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args:
            if kwargs:
                raise ValueError(
                    "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                    "input/output, but both types are given.")
            self._length = len(args[0])
            if any(self._length != len(dataset) for dataset in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets = args
        elif kwargs:
            tmp = list(kwargs.values())
            self._length = len(tmp[0])
            if any(self._length != len(dataset) for dataset in tmp):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """Concatenation of map-style datasets.

    >>> from funcgrad.utils.data import ConcatDataset
    >>> ds = ConcatDataset([[1, 2], [3]])
    >>> len(ds), ds[2], ds[-1]
    (3, 3, 3)
    """

    datasets: list
    cumulative_sizes: list

    @staticmethod
    def cumsum(sequence):
        r, s = [], 0
        for e in sequence:
            n = len(e)
            r.append(n + s)
            s += n
        return r

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """Chains iterable datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``.

    >>> from funcgrad.utils.data import Subset
    >>> s = Subset(["a", "b", "c", "d"], [3, 0])
    >>> len(s), s[0], s[[0, 1]]
    (2, 'd', ['d', 'a'])
    """

    dataset: Dataset
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            if isinstance(self.dataset, list):
                return [self.dataset[self.indices[i]] for i in idx]
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)

    @property
    def _collated_batch(self):
        # only offered when the wrapped dataset has the fast path (the loader checks for None)
        inner = getattr(self.dataset, "_collated_batch", None)
        if inner is None:
            return None
        mapped = np.asarray(self.indices, dtype=np.int64)
        return lambda indices: inner(mapped[_as_index(indices)])


def random_split(dataset: Dataset[T], lengths: Sequence[int | float],
                 generator=None) -> list[Subset[T]]:
    """Randomly split ``dataset`` into non-overlapping subsets of the given lengths or fractions.

    Fractions summing to 1 become ``floor(frac * len(dataset))`` items, remainders being
    spread round-robin. The permutation comes from ``generator`` (default: the global one).

    >>> import funcgrad
    >>> from funcgrad.utils.data import random_split
    >>> a, b = random_split(range(10), [0.7, 0.3], generator=funcgrad.Generator().manual_seed(0))
    >>> len(a), len(b), sorted(list(a) + list(b)) == list(range(10))
    (7, 3, True)
    """
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. "
                              f"This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = _sample.randperm(generator, sum(lengths)).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
