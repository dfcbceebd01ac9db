"""NumPy memory sharing as PyTorch's: ``b = a.numpy()`` then ``a.add_(1)`` shows in ``b``;
``t = from_numpy(arr)`` then ``np.add(arr, 1, out=arr)`` shows in ``t``.

XLA arrays are immutable and may not alias memory NumPy writes to (a computation still queued
could read a half-written buffer, and saved values must not change under autograd). So a CPU
tensor shared with NumPy keeps the NumPy array as the source of truth: its storage cell becomes a
:class:`_HostCell`, whose reads copy the NumPy array into a fresh XLA array and whose writes (the
in-place ops) copy the result into the NumPy array. Only such cells pay the copies; a plain
cell's slot read, the eager hot path, is unchanged. The cell holds the array weakly: once the
user drops every reference to it, the cell turns back into a plain one.

A view's array (``x[0].numpy()``, ``x.t().numpy()``) is a strided NumPy view of its base's.
Not shared (a copy, as before): non-CPU tensors, and state a ``funcgrad.jit`` step packs into
its own buffers (after a compiled step an array taken from a parameter no longer follows it).
"""

from __future__ import annotations

import itertools
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from . import _tensor
from ._tensor import _PlainCell, _raw_gen, _raw_value

_GENS = itertools.count(1 << 60)  # never equal to a view's cached generation: views re-read


class _Host:
    """What a host cell's value slot holds: the NumPy array (weakly) and the last value."""

    __slots__ = ("ref", "value")

    def __init__(self, array: np.ndarray, value):
        self.ref, self.value = weakref.ref(array), value


class _HostCell(_PlainCell):
    """A storage cell whose contents live in a NumPy array (see the module note).

    No slots of its own (the jit bridge may turn any cell into a ``_PackedCell`` in place).
    """

    __slots__ = ()

    @property
    def value(self):
        host = _raw_value.__get__(self)
        a = host.ref()
        if a is None or isinstance(host.value, jax.core.Tracer):
            if a is None:
                self._unshare()
            return host.value
        if a.shape != host.value.shape:  # resized through NumPy (``arr.resize``): stop sharing
            self._unshare()
            return host.value
        # a private NumPy copy first: JAX's converter keeps a reference to its last argument,
        # which must not keep the user's array (and so the sharing) alive
        host.value = jnp.asarray(a.astype(host.value.dtype, copy=True))
        return host.value

    @value.setter
    def value(self, v):
        host = _raw_value.__get__(self)
        host.value = v
        a = host.ref()
        if a is None or isinstance(v, jax.core.Tracer):
            return
        if a.shape != v.shape:
            self._unshare()
            return
        np.copyto(a, np.asarray(v), casting="unsafe")

    @property
    def gen(self):
        return next(_GENS) if _raw_value.__get__(self).ref() is not None else _raw_gen.__get__(self)

    @gen.setter
    def gen(self, g):
        _raw_gen.__set__(self, g)

    def _unshare(self) -> None:
        v = _raw_value.__get__(self).value
        self.__class__ = _PlainCell
        _raw_value.__set__(self, v)


def _attach(cell, array: np.ndarray) -> None:
    v = cell.value
    cell.__class__ = _HostCell
    _raw_value.__set__(cell, _Host(array, v))


def _on_cpu(v) -> bool:
    return all(d.platform == "cpu" for d in v.devices())


def numpy_of(t: "_tensor.Tensor") -> np.ndarray:
    """``t.numpy()``: an ndarray sharing ``t``'s storage where it can (CPU, not a view)."""
    v = t._concrete("numpy()")
    cell = t._cell
    if type(cell) is _HostCell:
        a = _raw_value.__get__(cell).ref()
        if a is not None and t._viewinfo is None and a.shape == v.shape:
            return a
    if type(cell) not in (_PlainCell, _HostCell) or not _on_cpu(v):
        return np.asarray(v)
    if t._viewinfo is not None:
        return _view_of_base(t, v)
    a = np.array(v)  # our own writable buffer, shared from now on
    _attach(cell, a)
    return a


def _view_of_base(t, v) -> np.ndarray:
    """A view's array: a strided NumPy view of its base's shared array, found by applying the
    view chain to the base's element numbers (``reshape``, ``t()``, slices, ``select``,
    ``expand``… are strided); a copy when the chain is not (a gather of elements)."""
    vi = t._viewinfo
    base = numpy_of(vi.base)
    if not base.flags.c_contiguous or type(t._cell) is not _HostCell:
        return np.array(v)
    try:
        idx = np.asarray(_tensor._view_kernel(vi.chain)(jnp.arange(base.size).reshape(base.shape)))
    except Exception:  # noqa: BLE001  (a chain that is not an index map: no view)
        return np.array(v)
    if idx.dtype.kind not in "iu" or idx.shape != v.shape or idx.size == 0:
        return np.array(v)
    offset = int(idx.flat[0])
    steps = [int(idx[(0,) * k + (1,) + (0,) * (idx.ndim - k - 1)]) - offset if n > 1 else 0
             for k, n in enumerate(idx.shape)]
    grid = offset + sum(np.arange(n).reshape((-1,) + (1,) * (idx.ndim - k - 1)) * s
                        for k, (n, s) in enumerate(zip(idx.shape, steps))) if idx.ndim else offset
    if not np.array_equal(grid, idx) or min(steps, default=0) < 0:
        return np.array(v)
    flat = base.reshape(-1)
    return np.lib.stride_tricks.as_strided(flat[offset:], idx.shape,
                                           [s * base.itemsize for s in steps])


def share_numpy(t: "_tensor.Tensor", array: np.ndarray) -> "_tensor.Tensor":
    """Make ``t`` (just made from ``array``) read and write ``array`` (``from_numpy``)."""
    if array.flags.writeable and _on_cpu(t._value):
        _attach(t._cell, array)
    return t


_tensor.register_above(numpy_of=numpy_of)  # Tensor.numpy()
