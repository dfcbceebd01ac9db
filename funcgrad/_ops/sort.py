"""Op table — sorting-based reductions: sort, argsort, msort, topk, kthvalue, median, nanmedian,
mode, cummax, cummin.

Every value-selecting op computes its indices first and gathers the values with
``take_along_axis``, so the gradient flows to exactly the returned index (PyTorch's rule for
``sort``/``topk``/``median(dim)``…). The ordering is a stable sort (ties keep their original
order; nan sorts as the largest value, as in PyTorch). ``median()`` over all elements splits the
gradient evenly among the elements equal to the median, as PyTorch does.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .. import _dtype
from .._tensor import _scalar_type_name, _wrap_dim
from ._registry import (DIM, REQUIRED, Tensor, _Default, apply, check_out_grad, defop, export, refuse, rerun,
                        same_dtype, write_out)
from .reduce import _one_dim, _same_scalar_type, return_type


# out=: PyTorch's kernels check their outputs' dtypes exactly, each in its own words
_out = functools.partial(write_out, check=same_dtype)


def _kth_values(r, o):
    return None if r.dtype is o.dtype else "output values must be of same type as input"


def _kth_indices(r, o):
    return None if o.dtype is _dtype.int64 else "output indices must be of scalar type Long"


def _median_values(r, o):
    if r.dtype is not o.dtype:
        return (f"Expected tensor for 'values' to have the same type as tensor for argument #2 'self'; but "
                f"type {o._type_name()} does not equal {r._type_name()} (while checking arguments for "
                f"median)")
    return None


def _median_indices(r, o):
    if o.dtype is not _dtype.int64:
        return (f"Expected tensor for argument #1 'indices' to have scalar type Long; but got "
                f"{o._type_name()} instead (while checking arguments for median)")
    return None


def _mode_check(which):
    def check(r, o):
        if r.dtype is not o.dtype:
            return (f"expected scalar type '{_scalar_type_name(r.dtype)}' but got "
                    f"'{_scalar_type_name(o.dtype)}' for {which} output")
        return None
    return check


def _sorted_idx(x, dim, descending):
    return jnp.argsort(x, axis=dim, descending=descending, stable=True)


def _gather(x, idx, dim, keepdim):
    vals = jnp.take_along_axis(x, idx, axis=dim)
    if not keepdim:
        vals, idx = jnp.squeeze(vals, dim), jnp.squeeze(idx, dim)
    return vals, idx.astype(jnp.int64)


def _scalar_pair(x):
    return x, jnp.zeros((), jnp.int64)


# ---- sort / argsort / topk / kthvalue -------------------------------------------------------------
def _sort(x, *, dim, descending):
    if x.ndim == 0:
        return _scalar_pair(x)
    return _gather(x, _sorted_idx(x, dim, descending), dim, True)


def _topk(x, *, k, dim, largest):
    if x.ndim == 0:
        return _scalar_pair(x)
    idx = jax.lax.slice_in_dim(_sorted_idx(x, dim, largest), 0, k, axis=dim)
    return _gather(x, idx, dim, True)


def _kthvalue(x, *, k, dim, keepdim):
    if x.ndim == 0:
        return _scalar_pair(x)
    idx = jax.lax.slice_in_dim(_sorted_idx(x, dim, False), k - 1, k, axis=dim)
    return _gather(x, idx, dim, keepdim)


_sort_op = defop("sort", _sort, "SortBackward0", diff_outputs=(0,))
# sort(stable=...) is PyTorch's sort.stable overload: the same (always stable) kernel, its node
_sort_stable_op = defop("sort_stable", _sort, "SortBackward1", diff_outputs=(0,))
STABLE = _Default(False)  # stable= not passed (stable=None still picks the sort.stable overload)
_argsort_op = defop("argsort", lambda x, dim, descending: _sort(
    x, dim=dim, descending=descending)[1], None)
_topk_op = defop("topk", _topk, "TopkBackward0", diff_outputs=(0,), errors={
    "b": (RuntimeError, "topk does not support bool dtypes on CPU"),
    "c": (RuntimeError, " topk does not support complex dtypes on CPU")})  # (sic: the space)
_kth_op = defop("kthvalue", _kthvalue, "KthvalueBackward0", diff_outputs=(0,), accepts="if",
                kernel="kthvalue_cpu")

sort_result = return_type("sort")
topk_result = return_type("topk")
kthvalue_result = return_type("kthvalue")


@export("sort")
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool | None = STABLE, out=None):
    """Sort along ``dim`` → ``(values, indices)``; ties keep their order (always stable), nan last
    (first when descending). Passing ``stable`` (keyword-only, a bool or None) records
    ``SortBackward1`` (PyTorch's ``sort.stable`` overload), else ``SortBackward0``.

    >>> import funcgrad
    >>> funcgrad.tensor([3, 1, 2]).sort().indices
    tensor([1, 2, 0])
    """
    d = _one_dim(dim, input.ndim)
    op = _sort_op if stable is STABLE else _sort_stable_op
    return _out(sort_result(*apply(op, input, dim=d, descending=bool(descending))), out)


@export("argsort")
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool | None = STABLE,
            out=None) -> Tensor:
    """Indices that sort ``input`` along ``dim`` (stable); not differentiable. ``stable`` is
    keyword-only, and ``out=`` goes with it (PyTorch's argsort.stable overload)."""
    if out is not None and stable is STABLE:  # (the parser's TypeError, from the checked wrapper)
        raise TypeError("argsort(): out= is taken with stable= only")
    d = _one_dim(dim, input.ndim)
    r = apply(_argsort_op, input, dim=d, descending=bool(descending))
    check_out_grad(out, "sort", input)  # (PyTorch's argsort.stable_out is sort's, whose values need grad)
    return _out(r, out)


@export("msort")
def msort(input: Tensor, *, out=None) -> Tensor:
    """Sorted along the first dimension (values only)."""
    return _out(sort(input, 0).values, out, name="sort")


@export("topk")
def topk(input: Tensor = REQUIRED, k: int = REQUIRED, dim: int = -1, largest: bool = True,
         sorted: bool = True, *args, out=None, **numpy):
    """The ``k`` largest (or smallest) elements along ``dim`` → ``(values, indices)``.

    Ties are broken by position (the earlier element first); PyTorch's CPU kernel may pick a
    different one among equal values.

    >>> import funcgrad
    >>> funcgrad.tensor([1.0, 5.0, 3.0]).topk(2)
    funcgrad.return_types.topk(
    values=tensor([5., 3.]),
    indices=tensor([1, 2]))
    """
    # (NumPy's names, more arguments, a non-bool largest or sorted: as PyTorch's parser reads the call)
    if args or numpy or type(largest) is not bool or type(sorted) is not bool:
        return rerun(topk)
    try:
        d = _wrap_dim(dim, input.ndim)
        n = input.shape[d] if input.ndim else 1
        if not 0 <= k <= n:
            raise RuntimeError("selected index k out of range")
        return _out(topk_result(*apply(_topk_op, input, k=int(k), dim=d, largest=largest)), out)
    except TypeError:  # (PyTorch's, where its parser refuses the call)
        refuse(topk)
        raise


@export("kthvalue")
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """The ``k``-th smallest element (1-based) along ``dim`` → ``(values, indices)``."""
    d = _one_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _out(kthvalue_result(*apply(_kth_op, input, k=int(k), dim=d, keepdim=bool(keepdim))),
                out, check=(_kth_values, _kth_indices))


# ---- median / nanmedian ---------------------------------------------------------------------------
def _median_pos(x, dim, ignore_nan):
    """Sorted indices and the position (keepdims) of the lower median along ``dim``."""
    idx = _sorted_idx(x, dim, False)
    n = x.shape[dim]
    n_nan = jnp.sum(jnp.isnan(x), axis=dim, keepdims=True) if jnp.issubdtype(
        x.dtype, jnp.inexact) else jnp.zeros((1,) * x.ndim, jnp.int64)
    if ignore_nan:
        pos = jnp.maximum((n - n_nan - 1) // 2, 0)
    else:  # a nan makes the median nan: pick the first nan (sorted last, stable)
        pos = jnp.where(n_nan > 0, n - n_nan, (n - 1) // 2)
    return idx, pos


def _median_dim(x, *, dim, keepdim, ignore_nan):
    if x.ndim == 0:
        return _scalar_pair(x)
    idx, pos = _median_pos(x, dim, ignore_nan)
    return _gather(x, jnp.take_along_axis(idx, pos.astype(idx.dtype), axis=dim), dim, keepdim)


def _median_all(x, *, ignore_nan):
    flat = x.reshape(-1)
    if flat.size == 0:
        return jnp.full((), jnp.nan, x.dtype)
    m = jax.lax.stop_gradient(_median_dim(flat, dim=0, keepdim=False, ignore_nan=ignore_nan)[0])
    if not jnp.issubdtype(x.dtype, jnp.inexact):  # an element, in the input's dtype (no gradient)
        return m
    # the gradient is split evenly among the elements equal to the median (nan: among the nans)
    mask = flat == m
    if not ignore_nan and jnp.issubdtype(x.dtype, jnp.inexact):
        mask = mask | (jnp.isnan(flat) & jnp.isnan(m))
    cnt = jnp.maximum(jnp.sum(mask), 1)
    zero = flat - jax.lax.stop_gradient(flat)
    return m + jnp.sum(jnp.where(mask, zero, 0)) / cnt


# PyTorch's kernels take integers and floats (``defop``'s dtype rule)
_MEDIAN_ALL, _MEDIAN_DIM = dict(accepts="if", kernel="median_cpu"), dict(accepts="if", kernel="median_out")
_median0 = defop("median", lambda x: _median_all(x, ignore_nan=False), "MedianBackward0", **_MEDIAN_ALL)
_median1 = defop("median_dim", lambda x, **kw: _median_dim(x, ignore_nan=False, **kw),
                 "MedianBackward1", diff_outputs=(0,), **_MEDIAN_DIM)
_nanmedian0 = defop("nanmedian", lambda x: _median_all(x, ignore_nan=True), "NanmedianBackward0",
                    **_MEDIAN_ALL)
_nanmedian1 = defop("nanmedian_dim", lambda x, **kw: _median_dim(x, ignore_nan=True, **kw),
                    "NanmedianBackward1", diff_outputs=(0,), **_MEDIAN_DIM)
median_result = return_type("median")
nanmedian_result = return_type("nanmedian")


@export("median")
def median(input: Tensor, dim: int | None = DIM, keepdim: bool = False, *, out=None):
    """Lower median of all elements (a tensor), or along ``dim`` → ``(values, indices)``; nan
    propagates.

    >>> import funcgrad
    >>> funcgrad.tensor([4.0, 1.0, 3.0, 2.0]).median()
    tensor(2.)
    """
    if dim is DIM:  # (None given is no int dim: the parser's TypeError, from _one_dim)
        return _out(apply(_median0, input), out)
    d = _one_dim(dim, input.ndim)
    return _out(median_result(*apply(_median1, input, dim=d, keepdim=bool(keepdim))), out,
                check=(_median_values, _median_indices))


@export("nanmedian")
def nanmedian(input: Tensor, dim: int | None = DIM, keepdim: bool = False, *, out=None):
    """Like :func:`median`, ignoring nan."""
    if dim is DIM:
        return _out(apply(_nanmedian0, input), out)
    d = _one_dim(dim, input.ndim)
    return _out(nanmedian_result(*apply(_nanmedian1, input, dim=d, keepdim=bool(keepdim))), out,
                check=(_median_values, _median_indices))


# ---- mode -----------------------------------------------------------------------------------------
def _insertion_order(x, dim):
    """The order PyTorch's CPU mode kernel sorts a row of at most 16 elements into: std::sort
    with ``<``, which is an insertion sort at that size, where a nan compares false with
    everything and so stays where the insertion leaves it (a stable sort would put it last)."""
    a = jnp.moveaxis(x, dim, -1)
    n = a.shape[-1]
    p = jnp.broadcast_to(jnp.arange(n), a.shape)
    for i in range(1, n):
        v, pv = a[..., i:i + 1], p[..., i:i + 1]
        lt = v < a[..., :i]
        # insert before the trailing run of larger elements, or at the front if below the first
        run = jnp.sum(jnp.cumprod(lt[..., ::-1], axis=-1), axis=-1, keepdims=True)
        j = jnp.where(lt[..., :1], 0, i - run)
        k = jnp.arange(i + 1)
        src = jnp.clip(jnp.where(k < j, k, k - 1), 0, i - 1)
        a = jnp.concatenate([jnp.where(k == j, v, jnp.take_along_axis(a[..., :i], src, -1)),
                             a[..., i + 1:]], axis=-1)
        p = jnp.concatenate([jnp.where(k == j, pv, jnp.take_along_axis(p[..., :i], src, -1)),
                             p[..., i + 1:]], axis=-1)
    return jnp.moveaxis(p, -1, dim)


def _mode(x, *, dim, keepdim):
    if x.ndim == 0:
        return _scalar_pair(x)
    n = x.shape[dim]
    if n == 1:  # one run per row
        return _gather(x, jnp.zeros(x.shape, jnp.int64), dim, keepdim)
    if jnp.issubdtype(x.dtype, jnp.inexact) and n <= 16:
        idx = _insertion_order(jax.lax.stop_gradient(x), dim)
    else:  # a stable sort: PyTorch's insertion sort up to 16 elements; past that its std::sort is
        # an unstable introsort (libstdc++'s; with nan undefined), so the index among ties is not
        # reproducible: funcgrad returns the last occurrence (README, "What differs")
        idx = _sorted_idx(x, dim, False)
    s = jnp.take_along_axis(x, idx, axis=dim)
    shape = [1] * x.ndim
    shape[dim] = n
    pos = jnp.broadcast_to(jnp.arange(n).reshape(shape), x.shape)
    # a new run wherever neighbours differ (each nan is a run of its own; -inf, -inf is one run)
    diff = jax.lax.slice_in_dim(s, 1, n, axis=dim) != jax.lax.slice_in_dim(s, 0, n - 1, axis=dim)
    edge = jnp.ones_like(jax.lax.slice_in_dim(diff, 0, 1, axis=dim))
    start = jnp.concatenate([edge, diff], axis=dim)
    end = jnp.concatenate([diff, edge], axis=dim)
    run_start = jax.lax.cummax(jnp.where(start, pos, 0), axis=dim)
    run_end = jax.lax.cummin(jnp.where(end, pos, n), axis=dim, reverse=True)
    count = run_end - run_start
    # most frequent value; ties → the smallest value (first in sorted order), as PyTorch; its
    # index is the value's last occurrence (the end of its run in the stable sort)
    best = jnp.argmax(count, axis=dim, keepdims=True)
    sel = jnp.take_along_axis(run_end, best, axis=dim)
    return _gather(x, jnp.take_along_axis(idx, sel, axis=dim), dim, keepdim)


_mode_op = defop("mode", _mode, "ModeBackward0", diff_outputs=(0,))
mode_result = return_type("mode")


@export("mode")
def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *, out=None):
    """Most frequent value along ``dim`` (the smallest on ties) and its last index; with nan in
    a row of up to 16 elements, PyTorch's CPU kernel's order (a nan counts once, where it sorts).
    Past 16 elements PyTorch's index among equal values comes from an unstable ``std::sort``;
    funcgrad's is the last occurrence.

    >>> import funcgrad
    >>> funcgrad.tensor([3, 2, 2, 1, 1]).mode()
    funcgrad.return_types.mode(
    values=tensor(1),
    indices=tensor(4))
    """
    d = _one_dim(dim, input.ndim)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    return _out(mode_result(*apply(_mode_op, input, dim=d, keepdim=bool(keepdim))), out,
                check=(_mode_check("values"), _mode_check("indices")))


# ---- cummax / cummin ------------------------------------------------------------------------------
def _cum_ext(x, *, dim, largest):
    if x.ndim == 0:
        return _scalar_pair(x)
    shape = [1] * x.ndim
    shape[dim] = x.shape[dim]
    pos = jnp.broadcast_to(jnp.arange(x.shape[dim], dtype=jnp.int64).reshape(shape), x.shape)
    inexact = jnp.issubdtype(x.dtype, jnp.inexact)

    def combine(a, b):
        (va, ia), (vb, ib) = a, b
        # the later element wins ties (PyTorch's >=), and a nan, once seen, sticks
        take_b = (vb >= va) if largest else (vb <= va)
        if inexact:
            take_b = (take_b & ~jnp.isnan(va)) | jnp.isnan(vb)
        return jnp.where(take_b, vb, va), jnp.where(take_b, ib, ia)

    _, idx = jax.lax.associative_scan(combine, (jax.lax.stop_gradient(x), pos), axis=dim)
    return jnp.take_along_axis(x, idx, axis=dim), idx


_cummax_op = defop("cummax", lambda x, dim: _cum_ext(x, dim=dim, largest=True), "CummaxBackward0",
                   diff_outputs=(0,))
_cummin_op = defop("cummin", lambda x, dim: _cum_ext(x, dim=dim, largest=False),
                   "CumminBackward0", diff_outputs=(0,))
cummax_result = return_type("cummax")
cummin_result = return_type("cummin")


# (topk, cummax, cummin: frameless frontends of _parser.SCHEMAS, see _parser.rerun)
@export("cummax")
def cummax(input: Tensor = REQUIRED, dim: int = REQUIRED, *args, out=None, **numpy):
    """Running maximum along ``dim`` → ``(values, indices)`` (index of the latest maximum).

    >>> import funcgrad
    >>> funcgrad.tensor([1, 1, 0, 2]).cummax(0).indices
    tensor([0, 1, 1, 3])
    """
    if args or numpy:
        return rerun(cummax)
    try:
        d = _wrap_dim(dim, input.ndim)
        return _out(cummax_result(*apply(_cummax_op, input, dim=d)), out, check=_same_scalar_type)
    except TypeError:
        refuse(cummax)
        raise


@export("cummin")
def cummin(input: Tensor = REQUIRED, dim: int = REQUIRED, *args, out=None, **numpy):
    """Running minimum along ``dim`` → ``(values, indices)``."""
    if args or numpy:
        return rerun(cummin)
    try:
        d = _wrap_dim(dim, input.ndim)
        return _out(cummin_result(*apply(_cummin_op, input, dim=d)), out, check=_same_scalar_type)
    except TypeError:
        refuse(cummin)
        raise


__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
           "cummax", "cummin"]
