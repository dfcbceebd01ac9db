"""Shared pieces of the jit bridge: storage generations, the structure counter
and the keys that tell one call's inputs from another's."""

from __future__ import annotations

import itertools
import operator
import threading

import jax
import numpy as np

from .._storage import _TracedCell as _TracedCell  # cells made under a trace
from .._structure import _STRUCTURE as _STRUCTURE, structure_changed as structure_changed
from .._tensor import Tensor

_Tracer = jax.core.Tracer
_GEN = itertools.count(1 << 48, 1 << 32)  # unique storage generations (never reached eagerly)
_get_cell = Tensor._cell.__get__
_get_grad = operator.attrgetter("_grad")
_get_requires_grad = operator.attrgetter("_requires_grad")
_get_cell_value = operator.attrgetter("value")  # not the slot: a _PackedCell unpacks
_SCALARS = (bool, int, float, complex, str, bytes, type(None))
# _STRUCTURE: bumped by Module.__setattr__/__delattr__ (funcgrad/_structure.py, below nn and here)


class _Nesting(threading.local):
    """How many funcgrad traces (a compiled step's, a compiled module's forward) run on this
    thread; a context manager counting one more. A compiled function or module called while one
    runs is inlined: its Python function runs in the outer trace, as ``torch.compile`` inside
    ``torch.compile`` does: ``if _storage.ACTIVE[0] and NESTING.depth`` (each trace runs inside a
    binding frame, so ``ACTIVE[0]``, one list index, is the cheap test that no trace runs on any
    thread, before this thread's counter is read)."""

    depth = 0  # (a class default: every thread starts at 0)

    def __enter__(self):
        self.depth += 1
        return self

    def __exit__(self, *exc):
        self.depth -= 1


NESTING = _Nesting()


def _scalar_key(v):
    return (type(v), v) if not isinstance(v, float) or v == v else (float, "nan")


def _flatten_args(args, kwargs):
    leaves, tree = jax.tree.flatten((args, kwargs), is_leaf=lambda x: isinstance(x, Tensor))
    return leaves, tree


_FAST_LEAVES = (Tensor, jax.Array, np.ndarray, bool, int, float, complex, str, bytes)
_NOT_OBJECTS = (Tensor, jax.Array, np.ndarray) + _SCALARS


def _objects(leaves) -> list:
    """The argument leaves that are objects to search for state (modules, optimizers…)."""
    return [x for x in leaves if not isinstance(x, _NOT_OBJECTS)]


def _is_fast_leaf(x) -> bool:
    return isinstance(x, _FAST_LEAVES)


def _leaf_key(x):
    if isinstance(x, Tensor):
        v = x._value
        return ("t", v.shape, v.dtype, x._requires_grad, x._grad is None)
    if isinstance(x, (jax.Array, np.ndarray)):
        return ("a", x.shape, x.dtype)
    if isinstance(x, _SCALARS):
        return ("s",) + _scalar_key(x)
    return ("o", id(x))
