"""dtypes: PyTorch's names over JAX/NumPy dtypes, and PyTorch's type promotion.

funcgrad enables ``jax_enable_x64`` so that ``int64``/``float64`` exist as in PyTorch; the
*default* float dtype stays float32, as in PyTorch, and is applied by funcgrad itself.
"""

from __future__ import annotations

import threading

import jax.numpy as jnp
import numpy as np


class dtype:
    """A PyTorch-style dtype: ``funcgrad.float32`` etc. Compares equal only to itself."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "_kind")

    def __init__(self, name: str, np_dtype, kind: str):
        self.name = name
        self.np = np.dtype(np_dtype)
        self._kind = kind  # 'b' bool, 'i' integer, 'f' float, 'c' complex
        self.is_floating_point = kind == "f"
        self.is_complex = kind == "c"
        self.is_signed = kind in "fc" or (kind == "i" and self.np.kind == "i")
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"funcgrad.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_complex(self) -> "dtype":
        return complex128 if self is float64 else complex64

    def to_real(self) -> "dtype":
        return float64 if self is complex128 else float32 if self is complex64 else self


bool_ = dtype("bool", np.bool_, "b")
uint8 = dtype("uint8", np.uint8, "i")
int8 = dtype("int8", np.int8, "i")
int16 = dtype("int16", np.int16, "i")
int32 = dtype("int32", np.int32, "i")
int64 = dtype("int64", np.int64, "i")
float16 = dtype("float16", np.float16, "f")
bfloat16 = dtype("bfloat16", jnp.bfloat16, "f")
float32 = dtype("float32", np.float32, "f")
float64 = dtype("float64", np.float64, "f")
complex64 = dtype("complex64", np.complex64, "c")
complex128 = dtype("complex128", np.complex128, "c")

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
_NP_TO_DTYPE = {d.np: d for d in ALL}
_NAMES = {d.name: d for d in ALL}
# PyTorch's aliases
_NAMES.update(half=float16, float=float32, double=float64, long=int64, int=int32, short=int16,
              cfloat=complex64, cdouble=complex128)


def _by_name(name: str) -> dtype:
    return _NAMES[name]


def from_np(np_dtype) -> dtype:
    """The funcgrad dtype of a NumPy/JAX dtype (``uint16`` etc. are not supported)."""
    try:
        return _NP_TO_DTYPE[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"funcgrad does not support the dtype {np.dtype(np_dtype)}") from None


def to_dtype(d) -> dtype:
    """Accept a funcgrad dtype, a NumPy/JAX dtype, a Python type or a name."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return get_default_dtype()
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return get_default_dtype().to_complex()
    if isinstance(d, str):
        return _NAMES[d]
    return from_np(d)


# ---- default dtype (process-wide, as in PyTorch) ---------------------------------------
_default = [float32]


def get_default_dtype() -> dtype:
    """The dtype of ``tensor(1.5)``, ``zeros(3)``, ``rand(3)``: float32 unless changed."""
    return _default[0]


def set_default_dtype(d) -> None:
    """Set the default floating point dtype (float16, bfloat16, float32 or float64)."""
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


# ---- PyTorch's type promotion --------------------------------------------------------------
# Categories ordered: bool < integer < float < complex. A tensor with dim > 0 beats a 0-dim
# tensor which beats a Python scalar, *within the same category*; a higher category always wins
# (then the dtype comes from the highest-priority operand of that category).
_CAT = {"b": 0, "i": 1, "f": 2, "c": 3}
_lock = threading.Lock()
_promo_cache: dict = {}


def _np_promote(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    key = (a, b)
    r = _promo_cache.get(key)
    if r is None:
        if bfloat16 in (a, b) and float16 in (a, b):
            r = float32
        elif a is bfloat16 and b._kind in "bi":
            r = a
        elif b is bfloat16 and a._kind in "bi":
            r = b
        else:
            r = from_np(jnp.promote_types(a.np, b.np))
        _promo_cache[key] = r
    return r


def result_type(operands) -> dtype:
    """PyTorch's ``result_type`` over operands given as (dtype, priority) pairs.

    priority 2: tensor with dim > 0; 1: 0-dim tensor; 0: Python scalar (whose dtype is
    bool_/int64/default float/complex by its Python type).
    """
    best = [None, None, None]  # per priority: promoted dtype
    for d, prio in operands:
        cur = best[prio]
        best[prio] = d if cur is None else _np_promote(cur, d)
    result = None
    for prio in (2, 1, 0):
        d = best[prio]
        if d is None:
            continue
        if result is None:
            result = d
        elif _CAT[d._kind] > _CAT[result._kind]:
            # a lower-priority operand of a higher category: its category, default width
            if d._kind == "f":
                result = get_default_dtype() if prio == 0 else d
            elif d._kind == "c":
                result = get_default_dtype().to_complex() if prio == 0 and result._kind != "f" else (
                    result.to_complex() if result._kind == "f" else d)
            else:
                result = d
    return result


def scalar_dtype(x) -> dtype:
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return int64
    if isinstance(x, float):
        return get_default_dtype()
    if isinstance(x, complex):
        return get_default_dtype().to_complex()
    raise TypeError(f"unsupported scalar type {type(x).__name__}")
