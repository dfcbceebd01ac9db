"""NumPy twins of ops (``Op.host``): the first uses of a key computed on the host, where
NumPy gives the kernel's bits (``dispatch.apply`` asks ``forward`` first).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import _cache, _factories
from ._device import put as _put
from ._tensor import _Array

# The first uses of an op with a NumPy twin per (static arguments, avals) run the twin
# (``Op.host``) and transfer the result (~0.1 ms), as ``_factories.host_full`` does for fills: a
# script's first step reshapes, transposes, slices, concatenates and masks dozens of shapes once
# or a few times each, and a kernel for each cost 15-90 ms cold. A use that keeps coming back (a
# training loop's) compiles at its HOST_USES-th call (HOST_FILLS-th with a large operand) and
# runs at the kernel's ~5-10 µs from then on. A twin gives the kernel's bits or refuses, so
# which path ran changes no bit (tested per op and dtype, tests/test_compile_counts.py). Only
# concrete, uncommitted CPU arrays that are not weakly typed, outside any trace, none over
# _HOST_MAX elements, the promoted ones already of the op's computing dtype; other operands only
# Python ints, floats (cast exactly) or None.
_HOST_OPERANDS = 64  # beyond (a fan-in of many tensors), the kernels of _fanin.py
# A twin's result costs ~50 µs more than the kernel's on small arrays (the transfer), ~0.2-0.3 ms
# on arrays of 2^18-2^20 elements, and a kernel's cold compile 20-90 ms: small operands keep
# their twin for HOST_USES uses (a short script's attention views and masks, used a few dozen
# times each, compile nothing), larger ones for HOST_FILLS.
HOST_USES = 128
_HOST_SMALL = 1 << 16  # elements, every array operand


def forward(op, vals, static, skey, cast):
    """``op``'s result made on the host while its key is new, else None (the kernel runs)."""
    if len(vals) == 1:  # (an aval: shape, dtype and weak type in one cheap hashable)
        v = vals[0]
        if type(v) is not _Array or v.committed:  # (a committed array keeps its device: the kernel's)
            return None
        key = (skey, cast, v.aval)
    else:
        parts = [skey, cast]
        for v in vals:
            t = type(v)
            if t is _Array:
                if v.committed:
                    return None
                parts.append(v.aval)
            elif v is None or t is int or t is float:
                parts.append(None)
            else:
                return None
        key = tuple(parts)
    seen = op._host_seen
    n = seen.get(key, 0)
    if n >= HOST_USES:  # (the fast exit of a use that keeps coming back)
        return None
    if n >= _factories.HOST_FILLS and any(type(v) is _Array and v.size > _HOST_SMALL for v in vals):
        seen[key] = HOST_USES  # a large operand: its kernel from its HOST_FILLS-th use on
        return None
    _factories._host_turn(seen, key, HOST_USES)  # counts this use (in a bounded table, as fills)
    pos = op.positions(len(vals))
    if not n and not _host_ok(vals, cast, pos):
        seen[key] = HOST_USES  # (checked once per key: the kernel runs)
        return None
    try:
        args = [np.asarray(v) if type(v) is _Array else
                host_scalar(v, cast.np) if cast is not None and v is not None and i in pos else v
                for i, v in enumerate(vals)]
        out = op.host(*args, **static)
    except Exception:  # a case the twin does not take: the kernel computes it
        seen[key] = HOST_USES
        return None
    if type(out) is tuple:
        return tuple(_put(np.array(o, order="C")) for o in out)
    return _put(np.array(out, order="C"))


def _host_ok(vals, cast, pos) -> bool:
    if len(vals) > _HOST_OPERANDS or not _cache.trace_clean():
        return False
    for i, v in enumerate(vals):
        if type(v) is _Array and (v.weak_type or v.size > _factories._HOST_MAX
                                  or not _factories.is_host_cpu(v)
                                  or cast is not None and i in pos and v.dtype != cast.np):
            return False
    return True


def host_exact(*arrays, reads=False):
    """Raise where XLA:CPU's kernel changes bits a NumPy twin keeps: any bfloat16 operand (its
    selects and gathers run in float32 and quiet nan payloads on the way back); with ``reads``
    (a comparison or truth test of the values), any subnormal float, which XLA:CPU reads as zero
    (PyTorch does not: such a kernel differs from PyTorch there, and the twin must not)."""
    for a in arrays:
        if not isinstance(a, np.ndarray):
            continue
        if a.dtype == jnp.bfloat16:
            raise TypeError("bfloat16: the kernel's bits")
        if reads and has_subnormal(a):
            raise ValueError("a subnormal: the kernel reads it as zero")


def has_subnormal(a: np.ndarray) -> bool:
    """Whether a float or complex array holds a subnormal (in either part of a complex)."""
    if a.dtype.kind not in "fcV" or not a.size:
        return False
    tiny = jnp.finfo(a.dtype).tiny
    for part in ((a.real, a.imag) if a.dtype.kind == "c" else (a,)):
        m = np.abs(part)
        if ((m > 0) & (m < tiny)).any():
            return True
    return False


def host_scalar(v, np_dtype):
    """A Python number as a 0-d NumPy array of ``np_dtype``, as the kernel casts it; raises
    where that cast would round (or overflow): the kernel's rounding is the kernel's to make."""
    s = np.array(v, np_dtype)  # (an int out of range raises OverflowError)
    back = s.item()
    if back != v and not (v != v and back != back):
        raise ValueError(f"{v!r} is not exact in {np_dtype}")
    return s
