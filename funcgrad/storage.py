"""``funcgrad.storage``: PyTorch's storages, as ``Tensor.untyped_storage()`` and ``Tensor.storage()``
give them: the memory under a tensor and all its views, by its address (``data_ptr()``) and its
bytes.

A funcgrad storage is a storage cell (``funcgrad._storage``): its array is replaced by each in-place
write, so a storage object reads the cell when asked (``tolist()`` after ``x.add_(1)`` shows the new
values, as PyTorch's live memory does) and its address is the cell's (``_storage.address``), not a
buffer's. What PyTorch does and funcgrad's do not: writing through a storage (``s[i] = v``,
``fill_``, ``copy_``), resizing it, or sharing it across processes.

>>> import funcgrad
>>> x = funcgrad.tensor([1.0, 2.0])
>>> s = x.untyped_storage()
>>> s.nbytes(), s.data_ptr() == x.data_ptr(), x[1:].untyped_storage().data_ptr() == s.data_ptr()
(8, True, True)
>>> s.tolist()
[0, 0, 128, 63, 0, 0, 0, 64]
"""

from __future__ import annotations

import warnings

import numpy as np

from . import _storage, _tensor

__all__ = ["UntypedStorage", "TypedStorage"]


class _StorageBase:
    __slots__ = ("_cell",)

    def __init__(self, cell):
        self._cell = cell

    def _array(self) -> np.ndarray:
        """The storage's elements now, as a flat NumPy array of its element type."""
        return np.frombuffer(np.asarray(self._cell.value).tobytes(), self._np_dtype())

    def tolist(self) -> list:
        return self._array().tolist()

    def data_ptr(self) -> int:
        return _storage.address(self._cell)

    @property
    def device(self):
        return _tensor.Tensor._wrap(self._cell.value).device

    def is_shared(self) -> bool:
        return False

    def is_pinned(self, device="cuda") -> bool:
        return False

    def __len__(self) -> int:
        return self.size()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, idx):
        items = self._array()
        if isinstance(idx, slice):
            raise RuntimeError("slicing a funcgrad storage is not supported")
        n = len(items)
        if not -n <= idx < n:
            raise IndexError(f"Index {idx} out of range for storage of size {n}")
        return items[idx].item()

    def __repr__(self) -> str:
        info = f"[{type(self).__module__}.{type(self).__qualname__}({self._info()}) of size {len(self)}]"
        return " " + "\n ".join(str(v) for v in self.tolist()) + "\n" + info

    __str__ = __repr__


class UntypedStorage(_StorageBase):
    """The bytes of a storage (``Tensor.untyped_storage()``): ``nbytes()``, ``data_ptr()``,
    ``tolist()`` (the bytes as ints, little-endian as the CPU keeps them)."""

    __slots__ = ()

    def nbytes(self) -> int:
        v = self._cell.value
        return v.size * v.dtype.itemsize

    def size(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @staticmethod
    def _np_dtype():
        return np.uint8

    def untyped(self) -> UntypedStorage:
        return self

    def _info(self) -> str:
        return f"device={self.device}"


class TypedStorage(_StorageBase):
    """PyTorch's deprecated typed view of a storage (``Tensor.storage()``): its elements in the
    tensor's dtype."""

    __slots__ = ("dtype",)

    def __init__(self, cell, dtype):
        super().__init__(cell)
        self.dtype = dtype

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def size(self) -> int:
        return self.nbytes() // self.dtype.itemsize

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def _untyped_storage(self) -> UntypedStorage:
        return UntypedStorage(self._cell)

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def _np_dtype(self):
        return self.dtype.np

    def _info(self) -> str:
        return f"dtype={self.dtype}, device={self.device}"

    def __repr__(self) -> str:
        _warn_typed_storage_removal()
        return super().__repr__()

    __str__ = __repr__


_WARNED = [False]


def _warn_typed_storage_removal(stacklevel: int = 2) -> None:
    if not _WARNED[0]:  # (PyTorch warns the first time only)
        _WARNED[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will "
                      "be the only storage class. This should only matter to you if you are using storages "
                      "directly.  To access UntypedStorage directly, use tensor.untyped_storage() instead of "
                      "tensor.storage()", UserWarning, stacklevel=stacklevel + 1)


def _storage_of(t, typed: bool):
    if typed:
        _warn_typed_storage_removal(3)
        return TypedStorage(t._cell, t.dtype)
    return UntypedStorage(t._cell)


_tensor.register_above(storage_of=_storage_of)


def is_storage(obj) -> bool:
    """Whether ``obj`` is a storage (``UntypedStorage`` or ``TypedStorage``), as PyTorch's.

    >>> import funcgrad
    >>> funcgrad.is_storage(funcgrad.ones(2).untyped_storage()), funcgrad.is_storage(funcgrad.ones(2))
    (True, False)
    """
    return isinstance(obj, _StorageBase)
