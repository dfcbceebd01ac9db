"""Python numbers as kernel operands: one reused 0-d array per value.

jit turns a Python scalar argument into a device buffer on every call (~3 µs here, as much as a
small kernel: every ``x + y`` passes ``alpha=1``, ``x * 2.0`` its 2.0). ``apply`` and the backward
paths pass the 0-d array of the value instead, made once: the same aval (weakly typed
int64/float64, or bool), so the same program and bits, and kernels only ever see the array form
(nothing compiles twice). Only where every operand is concrete: inside a trace a scalar stays a
Python number (an array made there would be a tracer).
"""

from __future__ import annotations

import struct

from jax.core import Tracer

from . import _cache
from ._device import put

NUMBERS = frozenset((int, float, bool))  # the Python scalar types given an array
_SCALAR_ARRAYS: dict = {}
SCALAR_ARRAYS_MAX = 4096  # distinct values kept (a value that changes every step: cleared)
_INT64 = 1 << 63


def scalar_array(v):
    """The reused 0-d array of a Python int, float or bool ``v``; anything else unchanged.

    >>> scalar_array(2.0) is scalar_array(2.0), scalar_array(2.0).dtype, scalar_array(None)
    (True, dtype('float64'), None)
    """
    t = type(v)
    if t not in NUMBERS:
        return v
    a = _SCALAR_ARRAYS.get((t, v))
    if a is not None:
        return a
    if t is int and not -_INT64 <= v < _INT64:
        return _out_of_int64(v)
    if not _cache.trace_clean():  # made inside a trace it would be a tracer: a number stays
        return v
    key = (t, v)
    if t is float:
        if not v or v != v:  # 0.0 == -0.0 and nan != nan as keys: these go by their bits
            key = (float, struct.pack("<d", v))
            a = _SCALAR_ARRAYS.get(key)
            if a is not None:
                return a
    if len(_SCALAR_ARRAYS) >= SCALAR_ARRAYS_MAX:
        _SCALAR_ARRAYS.clear()
    a = _SCALAR_ARRAYS[key] = put(v)
    return a


def _out_of_int64(v):
    """PyTorch's Scalar takes int64 and uint64: its errors past both (between them, jax's own)."""
    if v < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if v >= _INT64 << 1:
        raise OverflowError("int too big to convert")
    return v


def scalar_arrays(vals):
    """``vals`` with its Python scalars as ``scalar_array``s, where every array is concrete."""
    for v in vals:
        if type(v) in NUMBERS:
            break
    else:
        return vals
    if any(isinstance(v, Tracer) for v in vals):
        for v in vals:  # (inside a trace too)
            if type(v) is int and not -_INT64 <= v < _INT64:
                _out_of_int64(v)
        return vals
    return [scalar_array(v) for v in vals]


__all__ = ["NUMBERS", "scalar_array", "scalar_arrays", "SCALAR_ARRAYS_MAX"]
