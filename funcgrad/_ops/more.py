"""Op table — ops real scripts reached for (issue 18): ``diff``, ``cdist``, ``dist``,
``trapezoid``, ``bincount``, ``searchsorted``, ``bucketize``, ``histc``, ``index_put``, ``put``.

Node names are PyTorch's: ``diff`` is its composite of two narrows and a ``sub``
(``SubBackward0``), ``trapezoid`` ends in a scalar ``mul``/``div`` (``MulBackward1`` with
``dx``, ``DivBackward1`` with ``x``). At zero distance ``cdist``/``dist`` have PyTorch's
subgradient 0 (a plain ``jax.vjp`` of ``sqrt`` gives NaN there).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _broadcast
from .._tensor import _is_tracer, _scalar_type_name, _wrap_dim
from ._registry import Tensor, apply, defop, export
from .pointwise import sub
from .shape import cat


# ================================ diff ============================================================
@export("diff")
def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """``n``-th forward difference along ``dim`` (``SubBackward0``).

    >>> import funcgrad
    >>> funcgrad.diff(funcgrad.tensor([1, 3, 6, 10]))
    tensor([2, 3, 4])
    """
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        x = sub(x.narrow(d, 1, size - 1), x.narrow(d, 0, size - 1)) if x.dtype.name != "bool" else \
            x.narrow(d, 1, size - 1).logical_xor(x.narrow(d, 0, size - 1))
    return x


# ================================ cdist / dist ====================================================
def _pnorm(d, p, axis):
    """``‖d‖_p`` over ``axis`` with gradient 0 where the norm is 0 (PyTorch's convention)."""
    a = jnp.abs(d)
    if p == 0:
        return jnp.sum(a != 0, axis=axis).astype(d.dtype)
    if p == float("inf"):
        return jnp.max(a, axis=axis)
    if p == 1:
        return jnp.sum(a, axis=axis)
    s = jnp.sum(jnp.where(a > 0, a, 1) ** p * (a > 0), axis=axis)
    pos = s > 0
    return jnp.where(pos, jnp.where(pos, s, 1) ** (1.0 / p), 0)


_cdist = defop("cdist", lambda x1, x2, p: _pnorm(x1[..., :, None, :] - x2[..., None, :, :], p, -1),
               "CdistBackward0")
_dist = defop("dist", lambda x, y, p: _pnorm((x - y).ravel(), p, 0), "DistBackward0", promote="float")


@export("cdist", method=False)
def cdist(x1, x2, p: float = 2.0, compute_mode=None) -> Tensor:
    """Pairwise ``p``-norm distances between the rows of ``x1`` (…, P, M) and ``x2`` (…, R, M).

    >>> import funcgrad
    >>> funcgrad.cdist(funcgrad.tensor([[0.0, 0.0]]), funcgrad.tensor([[3.0, 4.0], [1.0, 0.0]]))
    tensor([[5., 1.]])
    """
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                           f"{x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if not x1.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}")
    try:
        return apply(_cdist, x1, x2, p=float(p))
    except RuntimeError:  # (ATen broadcasts the batch dims only: infer_size(x1's, x2's))
        _broadcast.raise_mismatch((x1.shape[:-2], x2.shape[:-2]))
        raise


@export("dist")
def dist(input, other, p: float = 2) -> Tensor:
    """``‖input - other‖_p`` (broadcast), a 0-d tensor (``DistBackward0``)."""
    return apply(_dist, input, other, p=float(p))


# ================================ trapezoid =======================================================
_trap_dx = defop("trapezoid_dx", lambda y, dx, dim: jnp.trapezoid(y, dx=dx, axis=dim), "MulBackward1",
                 promote="float")
_trap_x = defop("trapezoid_x", lambda y, x, dim: jnp.trapezoid(y, x=x, axis=dim), "DivBackward1",
                diff=(0, 1), promote="float")


@export("trapezoid", "trapz", method=False)
def trapezoid(y, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: spacing ``dx`` (default 1) or sample points ``x``.

    >>> import funcgrad
    >>> funcgrad.trapezoid(funcgrad.tensor([1.0, 2.0, 3.0]))
    tensor(4.)
    """
    d = _wrap_dim(dim, y.ndim)
    if x is None:
        return apply(_trap_dx, y, dx=1.0 if dx is None else float(dx), dim=d)
    if x.ndim == 1 and y.ndim > 1:  # 1-D sample points along dim
        shape = [1] * y.ndim
        shape[d] = x.shape[0]
        x = x.reshape(shape)
    return apply(_trap_x, y, x, dim=d)


# ================================ bincount / histc / searchsorted / bucketize ====================
@export("bincount")
def bincount(input, weights=None, minlength: int = 0) -> Tensor:
    """Counts of each value of a 1-D non-negative int tensor (length ``max + 1``: eager only)."""
    if input.dtype._kind != "i":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_tname(input)}'")
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    a = np.asarray(input._concrete("bincount()"))
    if a.size and a.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    n = max(int(a.max()) + 1 if a.size else 0, int(minlength))
    if weights is None:
        return Tensor._wrap(jnp.bincount(jnp.asarray(a), length=n).astype(jnp.int64))
    w = weights._value
    dt = w.dtype if w.dtype in (jnp.float32, jnp.float64) else jnp.float64
    return Tensor._wrap(jnp.zeros((n,), dt).at[jnp.asarray(a)].add(w.astype(dt)))


_histc = defop("histc", lambda x, bins, lo, hi: jnp.histogram(x.ravel(), bins=bins, range=(lo, hi))[0]
               .astype(x.dtype), None)


@export("histc")
def histc(input, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """Histogram of ``bins`` equal bins over ``[min, max]`` (the data's range when both are 0)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{_tname(input)}'")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("funcgrad.histc: max must be larger than min")
    if lo == hi:
        v = np.asarray(input._concrete("histc() over the data's range"))
        lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 0.0)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
    # values outside [min, max] are ignored (jnp.histogram's range does the same)
    return apply(_histc, input, bins=int(bins), lo=lo, hi=hi)


def _tname(t):
    return _scalar_type_name(t.dtype)


_searchsorted = defop(
    "searchsorted",
    lambda s, v, right, out_int32: (jax.vmap(lambda a, b: jnp.searchsorted(a, b, side="right" if right else "left"))(
        s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])).reshape(v.shape) if s.ndim > 1 else
        jnp.searchsorted(s, v, side="right" if right else "left")).astype(jnp.int32 if out_int32 else jnp.int64),
    None)


@export("searchsorted", method=False)
def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False, side=None,
                 sorter=None) -> Tensor:
    """Insertion points of ``input`` in the last dim of ``sorted_sequence``.

    >>> import funcgrad
    >>> funcgrad.searchsorted(funcgrad.tensor([1, 3, 5]), funcgrad.tensor([2, 6]))
    tensor([1, 3])
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side "
                               "of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    v = Tensor._wrap(jnp.asarray(input, sorted_sequence._value.dtype)) if scalar else input
    s = sorted_sequence
    if sorter is not None:
        s = s.gather(-1, sorter)
    if s.ndim > 1 and tuple(s.shape[:-1]) != tuple(v.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(s.shape)} and input value tensor {list(v.shape)}")
    r = apply(_searchsorted, s, v if v.ndim else v.reshape(1), right=bool(right), out_int32=bool(out_int32))
    return r.reshape(()) if v.ndim == 0 else r


@export("bucketize")
def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each element given 1-D sorted ``boundaries`` (``right`` as PyTorch's)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ================================ index_put / put ===================================================
@export("index_put")
def index_put(input, indices, values, accumulate: bool = False) -> Tensor:
    """Out-of-place ``input[indices] = values`` (``+=`` with ``accumulate``, duplicates summed)."""
    return input.clone().index_put_(indices, values, accumulate)


_put = defop("put", lambda x, i, s, accumulate: (
    x.ravel().at[jnp.where(i.ravel() < 0, i.ravel() + x.size, i.ravel())].add(s.ravel().astype(x.dtype))
    if accumulate else
    x.ravel().at[jnp.where(i.ravel() < 0, i.ravel() + x.size, i.ravel())].set(s.ravel().astype(x.dtype))
).reshape(x.shape), "PutBackward0", diff=(0, 2), linear=True)


@export("put")
def put(input, index, source, accumulate: bool = False) -> Tensor:
    """``input`` with the flat positions ``index`` set to (or, ``accumulate``, added) ``source``."""
    if index.dtype._kind != "i":
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_tname(index)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but "
                           f"got source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    v = index._value
    if not _is_tracer(v) and v.size:
        a = np.asarray(v)
        bad = (a < -n) | (a >= n)
        if bad.any():
            raise IndexError(f"out of range: tried to access index {int(a[bad].flat[0])} on a tensor of {n} "
                             f"elements.")
    return apply(_put, input, index, source, accumulate=bool(accumulate))


export("put_", function=False)(lambda self, index, source, accumulate=False:
                               self._inplace(put, index, source, accumulate))

trapz = trapezoid
