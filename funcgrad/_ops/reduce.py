"""Op table — reductions: sum, mean, max/min (all and per dim)."""

from __future__ import annotations

import collections

import jax.numpy as jnp

from .._dtype import to_dtype
from .._tensor import _wrap_dim
from ._registry import Tensor, apply, defop, export


def _dims(dim, ndim):
    """Normalise ``dim`` (int, tuple/list, None) to a sorted tuple or None (all)."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return None
        return tuple(sorted(_wrap_dim(d, ndim) for d in dim))
    return (_wrap_dim(dim, ndim),)


def _acc_dtype(x, dtype):
    if dtype is not None:
        return dtype
    return jnp.int64 if jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_ else None


def _sum(x, *, dim, keepdim, dtype):
    return jnp.sum(x, axis=dim, keepdims=keepdim, dtype=_acc_dtype(x, dtype))


def _mean(x, *, dim, keepdim, dtype):
    return jnp.mean(x if dtype is None else x.astype(dtype), axis=dim, keepdims=keepdim)


_sum0 = defop("sum", _sum, "SumBackward0", linear=True)
_sum1 = defop("sum_dim", _sum, "SumBackward1", linear=True)
_mean0 = defop("mean", _mean, "MeanBackward0", linear=True)
_mean1 = defop("mean_dim", _mean, "MeanBackward1", linear=True)


@export("sum")
def sum(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """Sum of all elements (``SumBackward0``) or over ``dim`` (``SumBackward1``).

    >>> import funcgrad
    >>> funcgrad.tensor([[1, 2], [3, 4]]).sum(dim=1)
    tensor([3, 7])
    """
    dims = _dims(dim, input.ndim)
    dt = None if dtype is None else to_dtype(dtype).np
    if dims is None and dim is None:
        return apply(_sum0, input, dim=None, keepdim=False, dtype=dt)
    return apply(_sum1, input, dim=dims, keepdim=bool(keepdim), dtype=dt)


@export("mean")
def mean(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """Mean of all elements (``MeanBackward0``) or over ``dim`` (``MeanBackward1``)."""
    if dtype is None and not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {_scalar_name(input.dtype)}")
    dims = _dims(dim, input.ndim)
    dt = None if dtype is None else to_dtype(dtype).np
    if dims is None and dim is None:
        return apply(_mean0, input, dim=None, keepdim=False, dtype=dt)
    return apply(_mean1, input, dim=dims, keepdim=bool(keepdim), dtype=dt)


def _scalar_name(d):
    from .._tensor import _scalar_type_name
    return _scalar_type_name(d)


# ---- max / min ----------------------------------------------------------------------------------
# Full reductions split the gradient evenly among ties (jnp.max's rule, and PyTorch's for max());
# per-dim reductions send it to the returned index only (PyTorch's rule for max(dim)).
def _max_dim(x, *, dim, keepdim, largest):
    idx = jnp.argmax(x, axis=dim, keepdims=True) if largest else jnp.argmin(x, axis=dim, keepdims=True)
    vals = jnp.take_along_axis(x, idx, axis=dim)
    if not keepdim:
        vals, idx = jnp.squeeze(vals, dim), jnp.squeeze(idx, dim)
    return vals, idx.astype(jnp.int64)


_max_all = defop("max", lambda x: jnp.max(x), "MaxBackward1")
_min_all = defop("min", lambda x: jnp.min(x), "MinBackward1")
_max_d = defop("max_dim", lambda x, dim, keepdim: _max_dim(x, dim=dim, keepdim=keepdim, largest=True),
               "MaxBackward0", diff_outputs=(0,))
_min_d = defop("min_dim", lambda x, dim, keepdim: _max_dim(x, dim=dim, keepdim=keepdim, largest=False),
               "MinBackward0", diff_outputs=(0,))
_amax = defop("amax", lambda x, dim, keepdim: jnp.max(x, axis=dim, keepdims=keepdim), "AmaxBackward0")
_amin = defop("amin", lambda x, dim, keepdim: jnp.min(x, axis=dim, keepdims=keepdim), "AminBackward0")
_argmax = defop("argmax", lambda x, dim, keepdim: jnp.argmax(x, axis=dim, keepdims=keepdim).astype(jnp.int64))
_argmin = defop("argmin", lambda x, dim, keepdim: jnp.argmin(x, axis=dim, keepdims=keepdim).astype(jnp.int64))

max_result = collections.namedtuple("max", ["values", "indices"])
min_result = collections.namedtuple("min", ["values", "indices"])


def _reduce_minmax(input, dim, keepdim, other, is_max):
    from .pointwise import maximum, minimum
    if isinstance(dim, Tensor):  # max(a, b)
        other, dim = dim, None
    if other is not None:
        return maximum(input, other) if is_max else minimum(input, other)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(f"{'max' if is_max else 'min'}(): Expected reduction dim to be "
                               f"specified for input.numel() == 0. Specify the reduction dim "
                               f"with the 'dim' argument.")
        return apply(_max_all if is_max else _min_all, input)
    d = _wrap_dim(dim, input.ndim)
    v, i = apply(_max_d if is_max else _min_d, input, dim=d if input.ndim else None,
                 keepdim=bool(keepdim))
    return (max_result if is_max else min_result)(v, i)


@export("max")
def max(input, dim=None, keepdim=False, *, other=None):
    """``max()`` → value (``MaxBackward1``); ``max(dim)`` → ``(values, indices)`` (``MaxBackward0``);
    ``max(a, b)`` → ``maximum``."""
    return _reduce_minmax(input, dim, keepdim, other, True)


@export("min")
def min(input, dim=None, keepdim=False, *, other=None):
    """``min()``, ``min(dim)`` → ``(values, indices)``, ``min(a, b)``."""
    return _reduce_minmax(input, dim, keepdim, other, False)


@export("amax")
def amax(input, dim=(), keepdim=False) -> Tensor:
    return apply(_amax, input, dim=_dims(dim, input.ndim), keepdim=bool(keepdim))


@export("amin")
def amin(input, dim=(), keepdim=False) -> Tensor:
    return apply(_amin, input, dim=_dims(dim, input.ndim), keepdim=bool(keepdim))


@export("argmax")
def argmax(input, dim=None, keepdim=False) -> Tensor:
    """Index of the maximum (flattened when ``dim`` is None); not differentiable."""
    d = None if dim is None else _wrap_dim(dim, input.ndim)
    return apply(_argmax, input, dim=d, keepdim=bool(keepdim) and d is not None)


@export("argmin")
def argmin(input, dim=None, keepdim=False) -> Tensor:
    d = None if dim is None else _wrap_dim(dim, input.ndim)
    return apply(_argmin, input, dim=d, keepdim=bool(keepdim) and d is not None)
