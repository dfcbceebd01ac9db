"""``DataLoader``: batches from a dataset through a sampler and a collate function.

PyTorch's constructor, argument checks and messages, ``len(loader)``, map-style and iterable
datasets. Two funcgrad specifics:

* **Workers are in-process.** ``num_workers > 0`` does not fork processes (a JAX runtime
  cannot be forked safely); one background *thread* loads and collates up to
  ``prefetch_factor * num_workers`` batches ahead, overlapping data loading with the training
  step. Order and contents are exactly those of ``num_workers=0``. In that thread
  ``get_worker_info()`` returns ``WorkerInfo(id=0, num_workers=1, ...)`` (a single producer, so
  iterable datasets need no sharding) and ``worker_init_fn(0)`` is called there once per
  epoch (once in all with ``persistent_workers=True``). Exceptions raised while loading are
  re-raised in the main thread unchanged. ``pin_memory`` and ``pin_memory_device`` are accepted
  and do nothing (XLA manages host buffers); ``multiprocessing_context`` is only validated.
* **Fast batches.** With the default collate function, a ``TensorDataset`` (or a ``Subset`` of
  one) is batched with one gather per tensor rather than per-sample indexing and a stack.
"""

from __future__ import annotations

import itertools
import math
import os
import queue
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ...autograd import grad_mode
from ._collate import default_collate, default_convert
from ._rng import seed_from
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "WorkerInfo", "get_worker_info"]


@dataclass
class WorkerInfo:
    """What ``get_worker_info()`` returns inside funcgrad's loader thread."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    worker_method: str = "thread"


_worker = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """The ``WorkerInfo`` of the calling DataLoader worker thread; ``None`` in the main thread."""
    return getattr(_worker, "info", None)


class _InfiniteConstantSampler(Sampler):
    def __iter__(self):
        while True:
            yield None


_MAP, _ITERABLE = 0, 1


class DataLoader:
    """Combines a dataset and a sampler into an iterable over batches.

    Args:
        dataset: map-style (``__getitem__``/``__len__``) or ``IterableDataset``.
        batch_size: samples per batch; ``None`` disables automatic batching.
        shuffle: reshuffle at every epoch (a fresh draw from ``generator`` or the global
            generator, so ``funcgrad.manual_seed`` makes it reproducible).
        sampler, batch_sampler: custom index order / index batches.
        num_workers: ``> 0`` prefetches in one background thread (see the module notes).
        collate_fn: merges a list of samples into a batch (default: ``default_collate``).
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a batch from the worker thread (0: forever).
        generator: a ``funcgrad.Generator`` for the shuffling and the workers' base seed.

    >>> import funcgrad
    >>> from funcgrad.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(funcgrad.arange(10.).view(5, 2), funcgrad.arange(5))
    >>> loader = DataLoader(ds, batch_size=2)
    >>> len(loader)
    3
    >>> [y.tolist() for x, y in loader]
    [[0, 1], [2, 3], [4]]
    """

    _initialized = False

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler | Iterable | None = None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing.let num_workers "
                "> 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process loading "
                             f"(num_workers > 0), but got num_workers={num_workers}")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _ITERABLE
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _MAP

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _ITERABLE:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._workers_initialized = False
        self._initialized = True
        self.check_worker_number_rationality()

    def __setattr__(self, attr, val) -> None:
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                          "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> "_LoaderIter":
        if self.num_workers > 0:
            # (PyTorch checks as each iterator's workers start: once with persistent workers)
            if not (self.persistent_workers and self._workers_initialized):
                self.check_worker_number_rationality()
            return _ThreadedLoaderIter(self)
        return _LoaderIter(self)

    def check_worker_number_rationality(self) -> None:
        """PyTorch's warning when ``num_workers`` exceeds the CPUs this process may use
        (``os.sched_getaffinity``, else ``os.cpu_count``), with its message and ``stacklevel``:
        the loader still asks for that many workers, though funcgrad's run as one thread."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        suggest = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        if suggest is None:
            why = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            why = (f"Our suggested max number of worker in current system is {suggest}"
                   f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is "
                   "smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. "
                      f"{why} Please be aware that excessive worker creation might get DataLoader "
                      "running slow or even freeze, lower the worker number to avoid potential "
                      "slowness/freeze if necessary.", UserWarning, stacklevel=2)

    def __len__(self) -> int:
        if self._dataset_kind == _ITERABLE:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _Fetcher:
    """Yields batches: next index (batch) → fetch → collate. Holds no reference to the
    iterator, so a worker thread running it does not keep an abandoned iterator alive."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader
        self.dataset = loader.dataset
        self.kind = loader._dataset_kind
        self.auto = loader._auto_collation
        self.collate = loader.collate_fn
        self.drop_last = loader.drop_last
        self.batch_size = loader.batch_size
        fast = None
        if self.kind == _MAP and self.auto and self.collate is default_collate:
            fast = getattr(self.dataset, "_collated_batch", None)
        self.fast = fast
        self.getitems = getattr(self.dataset, "__getitems__", None) if self.kind == _MAP else None
        # start the sampler now, in the calling thread, so its random draws (one per epoch)
        # happen in a deterministic place even when a worker thread consumes the indices
        self.indices = None
        if self.kind == _MAP:
            it = iter(loader._index_sampler)
            first = next(it, _END)
            self.indices = iter(()) if first is _END else itertools.chain((first,), it)
        self.dataset_iter = None

    def __call__(self):
        """The next batch; raises StopIteration at the end."""
        if self.kind == _ITERABLE:
            if self.dataset_iter is None:
                self.dataset_iter = iter(self.dataset)
            if not self.auto:
                return self.collate(next(self.dataset_iter))
            data = list(itertools.islice(self.dataset_iter, self.batch_size))
            if not data or (self.drop_last and len(data) < self.batch_size):
                raise StopIteration
            return self.collate(data)
        index = next(self.indices)
        if not self.auto:
            return self.collate(self.dataset[index])
        if self.fast is not None:
            return self.fast(index)
        if self.getitems is not None:
            data = self.getitems(index)
        else:
            data = [self.dataset[i] for i in index]
        return self.collate(data)


class _LoaderIter:
    """Single-thread iteration over a DataLoader (one epoch)."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._num_yielded = 0
        # drawn even without workers (as PyTorch does) so that the shuffling order does not
        # depend on num_workers
        self._base_seed = seed_from(loader.generator)
        self._fetch = _Fetcher(loader)

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        data = self._fetch()
        self._num_yielded += 1
        return data


_END = object()


class _ThreadedLoaderIter(_LoaderIter):
    """``num_workers > 0``: one daemon thread fetches and collates ahead into a bounded queue."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        size = max(1, (loader.prefetch_factor or 2) * loader.num_workers)
        self._queue: queue.Queue = queue.Queue(maxsize=size)
        self._stop = threading.Event()
        self._done = False
        run_init = loader.worker_init_fn is not None and not (
            loader.persistent_workers and loader._workers_initialized)
        loader._workers_initialized = True
        info = WorkerInfo(id=0, num_workers=1, seed=self._base_seed, dataset=loader.dataset)
        init_fn = loader.worker_init_fn if run_init else None
        # grad mode is thread-local: the worker collates under the mode of the caller of iter()
        modes = (grad_mode._state.enabled, grad_mode._state.inference)
        self._thread = threading.Thread(
            target=_produce, args=(self._fetch, self._queue, self._stop, info, init_fn, modes),
            daemon=True, name="funcgrad-DataLoader-worker-0")
        self._thread.start()

    def __next__(self):
        if self._done:
            raise StopIteration
        timeout = self._loader.timeout
        try:
            ok, data = self._queue.get(timeout=timeout if timeout > 0 else None)
        except queue.Empty:
            self._shutdown()
            raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
        if not ok:
            self._shutdown()
            raise data
        if data is _END:
            self._shutdown()
            raise StopIteration
        self._num_yielded += 1
        return data

    def _shutdown(self) -> None:
        self._done = True
        self._stop.set()

    def __del__(self):
        self._stop.set()


def _produce(fetch: _Fetcher, q: queue.Queue, stop: threading.Event, info: WorkerInfo,
             init_fn, modes) -> None:
    """The worker thread: fetch batches into ``q`` until the end, an error or ``stop``."""
    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    _worker.info = info
    grad_mode._state.enabled, grad_mode._state.inference = modes
    try:
        if init_fn is not None:
            init_fn(0)
        while not stop.is_set():
            try:
                item = (True, fetch())
            except StopIteration:
                put((True, _END))
                return
            if not put(item):
                return
    except BaseException as e:  # handed to the consumer, re-raised there
        put((False, e))
