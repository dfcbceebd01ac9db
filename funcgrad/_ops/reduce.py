"""Op table — reductions: sum, mean, max/min (all and per dim), prod, var/std, logsumexp,
nansum/nanmean, any/all, count_nonzero, aminmax, and scans (cumsum, cumprod, logcumsumexp).

Sorting-based reductions (sort, topk, median, mode, cummax…) live in ``sort.py``."""

from __future__ import annotations

import collections
import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np

from .._dtype import to_dtype
from .._host import host_exact
from .._tensor import _Array, _scalar_type_name, _wrap_dim
from ._parser import refuse as _refuse
from ._registry import DIM, KEEPDIM, REQUIRED, Tensor, apply, defop, export
from ._registry import check_out_grad as _check_out_grad
from ._registry import keepdim as _keepdim
from ._registry import numpy_call as _numpy_call
from ._registry import rerun as _rerun
from ._registry import write_out as _out
from ._sums import acc_sum
from .math import isnan, logical_not
from .pointwise import maximum, minimum, true_divide


def _dims(dim, ndim):
    """Normalise ``dim`` (int, tuple/list, None) to a sorted tuple or None (all). A 0-d tensor
    takes dim 0 / -1 as PyTorch does (checked by ``_wrap_dim``) and reduces over no axis.

    What PyTorch's parser takes for ``int[1] dim`` only: a bool, or a list whose first element is
    one (the parser reads a list by its first element), is no int there; that and any other
    non-integer is a TypeError, which the op's ``_parser.checked`` wrapper (sum and mean:
    ``_parser.refuse``) replaces by PyTorch's."""
    if dim is None:
        return None
    if type(dim) is int:  # `x.sum(1)`: the answer for (dim, ndim) is remembered (errors are not)
        dims = _INT_DIMS.get((dim, ndim))
        if dims is None:
            d = _wrap_dim(dim, ndim)  # PyTorch's IndexError when out of range
            dims = _INT_DIMS[(dim, ndim)] = (d,) if ndim else ()
        return dims
    if isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return None
        wrapped = _dim_list(dim, ndim)  # (all in range first)
        for i, d in enumerate(wrapped):  # then the first repeat in the order given, as PyTorch's
            if d in wrapped[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims = tuple(sorted(wrapped))
    else:
        dims = (_one_dim(dim, ndim, "tuple of ints"),)
    return dims if ndim else ()


_INT_DIMS: dict = {}  # (dim, ndim) -> _dims' answer for an int dim (a few entries per rank)


def _dim_list(dim, ndim) -> list:
    """A list of dims, each wrapped, in the order given (what is refused: see ``_dims``)."""
    if dim and type(dim[0]) is bool:  # (a bool after the first is its int: PyTorch unpacks it so)
        raise TypeError("argument 'dim' must be tuple of ints, but found element of type bool at pos 0")
    return [_wrap_dim(operator.index(d), ndim) for d in dim]


def _one_dim(dim, ndim, kind="int"):
    """One dim (an ``int dim`` of PyTorch's), wrapped: its IndexError out of range; a bool, None or
    any other non-integer is a TypeError (see ``_dims``)."""
    if type(dim) is bool:
        raise TypeError(f"argument 'dim' must be {kind}, not bool")
    return _wrap_dim(operator.index(dim), ndim)


def _acc_dtype(x, dtype):
    if dtype is not None:
        return dtype
    return jnp.int64 if jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_ else None


def _sum(x, *, dim, keepdim, dtype):
    # (float32 over several axes: partial sums as PyTorch's cascade_sum, see _sums.py)
    return acc_sum(x, dim, keepdims=keepdim, dtype=_acc_dtype(x, dtype))


def _mean(x, *, dim, keepdim, dtype):
    """PyTorch's CPU mean: the sum (float32 for half types), divided by the count, cast back.
    XLA turns a division by a constant into a product with its reciprocal, one ulp off (118 /
    1000 in float32: jnp.mean's), where PyTorch divides; so the count is divided by as div's
    kernel divides (``true_divide``: a broadcast array behind an optimization barrier), and the
    backward, the transposed division, divides the cotangent as PyTorch's ``mean_backward``."""
    x = x if dtype is None else x.astype(dtype)
    n = x.size if dim is None else int(np_prod([x.shape[d] for d in dim]))
    acc = jnp.float32 if x.dtype in (jnp.float16, jnp.bfloat16) else x.dtype
    s = acc_sum(x, dim, keepdims=keepdim, dtype=acc)
    if jnp.issubdtype(acc, jnp.complexfloating):  # (a complex by a real count: each part divided)
        return jax.lax.complex(true_divide(s.real, n), true_divide(s.imag, n)).astype(x.dtype)
    return true_divide(s, n).astype(x.dtype)


_sum0 = defop("sum", _sum, "SumBackward0", linear=True)
_sum1 = defop("sum_dim", _sum, "SumBackward1", linear=True)
_mean0 = defop("mean", _mean, "MeanBackward0", linear=True)
_mean1 = defop("mean_dim", _mean, "MeanBackward1", linear=True)
# the hot calls `x.sum()`, `x.sum(1)` and `x.mean()`, made once (Op.call_with)
_SUM0 = _sum0.call_with(dim=None, keepdim=False, dtype=None)
_MEAN0 = _mean0.call_with(dim=None, keepdim=False, dtype=None)
_SUM_DIM: dict = {}  # (int dim, ndim, keepdim) -> x.sum(dim, keepdim) (a few entries per rank)


@export("sum")  # (its method: export's copy, code named Tensor.sum, see _registry.method_copy)
def sum(input=REQUIRED, dim=DIM, keepdim=KEEPDIM, *, dtype=None, **numpy) -> Tensor:
    """Sum of all elements (``SumBackward0``) or over ``dim`` (``SumBackward1``; ``dim=None``
    given: over all, as PyTorch's dim overload). NumPy's ``axis=``, ``keepdims=`` and ``a=`` are
    taken as PyTorch's parser takes them.

    >>> import funcgrad
    >>> funcgrad.tensor([[1, 2], [3, 4]]).sum(dim=1)
    tensor([3, 7])
    """
    # (the parameters keep the values given: _refuse reads the call back from them)
    if numpy:  # (NumPy's names and out= taken here: the hot calls pay no wrapper of export's)
        return _numpy_call(sum, input, dim, keepdim, dtype, numpy)
    kd = False if keepdim is KEEPDIM else _keepdim(sum, dim, keepdim)
    if dtype is None and isinstance(input, Tensor):  # `loss = x.sum()`, `x.sum(1)`: hot
        if dim is DIM:
            return _SUM0(input)
        if type(dim) is int and type(kd) is bool:
            v = input._cell.value  # (its rank: Tensor.dim() without its two frames)
            nd = len(v.aval.shape) if type(v) is _Array and input._viewinfo is None else input.dim()
            call = _SUM_DIM.get(key := (dim, nd, kd))
            if call is None:  # (_dims raises PyTorch's IndexError for a dim out of range)
                call = _SUM_DIM[key] = _sum1.call_with(dim=_dims(dim, key[1]), keepdim=kd, dtype=None)
            return call(input)
    if type(kd) is not bool or input is REQUIRED:  # (`x.sum(0, 1)`: PyTorch's parser refuses it)
        _refuse(sum)
    dt = None if dtype is None else to_dtype(dtype).np
    if dim is DIM:
        return apply(_sum0, input, dim=None, keepdim=False, dtype=dt)
    try:
        dims = _dims(dim, input.ndim)
    except TypeError:  # (a dim PyTorch's parser refuses: `x.sum([True])`)
        _refuse(sum)
        raise
    return apply(_sum1, input, dim=dims, keepdim=kd, dtype=dt)


@export("mean")
def mean(input=REQUIRED, dim=DIM, keepdim=KEEPDIM, *, dtype=None, **numpy) -> Tensor:
    """Mean of all elements (``MeanBackward0``) or over ``dim`` (``MeanBackward1``; ``dim=None``
    given: over all, as PyTorch's dim overload). NumPy's names as sum's."""
    if numpy:  # (as sum's)
        return _numpy_call(mean, input, dim, keepdim, dtype, numpy)
    kd = False if keepdim is KEEPDIM else _keepdim(mean, dim, keepdim)
    if dim is DIM and dtype is None and isinstance(input, Tensor) \
            and input._value.dtype.kind in "fc":  # `loss = x.mean()`: hot
        return _MEAN0(input)
    if type(kd) is not bool or input is REQUIRED:  # (as sum's)
        _refuse(mean)
    try:  # (as sum's: the parser's checks come before the dtype's)
        dims = None if dim is DIM else _dims(dim, input.ndim)
    except TypeError:
        _refuse(mean)
        raise
    if dtype is None and not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {_scalar_name(input.dtype)}")
    dt = None if dtype is None else to_dtype(dtype).np
    if dim is DIM:
        return apply(_mean0, input, dim=None, keepdim=False, dtype=dt)
    return apply(_mean1, input, dim=dims, keepdim=kd, dtype=dt)



def _scalar_name(d):
    return _scalar_type_name(d)


# ---- max / min ----------------------------------------------------------------------------------
# Full reductions split the gradient evenly among ties (jnp.max's rule, and PyTorch's for max());
# per-dim reductions send it to the returned index only (PyTorch's rule for max(dim)).
def _max_dim(x, *, dim, keepdim, largest):
    if x.ndim == 0:
        return x, jnp.zeros((), jnp.int64)
    idx = jnp.argmax(x, axis=dim, keepdims=True) if largest else jnp.argmin(x, axis=dim, keepdims=True)
    vals = jnp.take_along_axis(x, idx, axis=dim)
    if not keepdim:
        vals, idx = jnp.squeeze(vals, dim), jnp.squeeze(idx, dim)
    return vals, idx.astype(jnp.int64)


def _even_jvp(primals, tangents, out):
    # PyTorch's evenly_distribute_backward: the gradient is shared by the elements equal to the
    # result (by the nan elements when the result is nan; jax.vjp gives them nothing)
    (x,), (t,) = primals, tangents
    mask = jnp.where(jnp.isnan(out), jnp.isnan(x), x == out).astype(out.dtype)
    return jnp.sum(t * mask) / jnp.sum(mask)


def _amax_jvp(primals, tangents, out, *, dim, keepdim):
    # PyTorch: grad / count * (self == result) per reduced slice (a nan slice: 0 / 0 = nan)
    (x,), (t,) = primals, tangents
    o = out if keepdim or dim is None else jnp.expand_dims(out, dim)
    mask = (x == o).astype(out.dtype)
    n = jnp.sum(mask, axis=dim, keepdims=True)
    # the factor is built with where (XLA folds t * float(compare) into a select, which would
    # turn PyTorch's 0 / 0 = nan back into 0)
    f = jnp.where(n == 0, jnp.nan, mask / jnp.where(n == 0, 1, n)).astype(out.dtype)
    return jnp.sum(t * f, axis=dim, keepdims=keepdim)


_max_all = defop("max", lambda x: jnp.max(x), "MaxBackward1", jvp=_even_jvp)
_min_all = defop("min", lambda x: jnp.min(x), "MinBackward1", jvp=_even_jvp)
_max_d = defop("max_dim", lambda x, dim, keepdim: _max_dim(x, dim=dim, keepdim=keepdim, largest=True),
               "MaxBackward0", diff_outputs=(0,))
_min_d = defop("min_dim", lambda x, dim, keepdim: _max_dim(x, dim=dim, keepdim=keepdim, largest=False),
               "MinBackward0", diff_outputs=(0,))
_amax = defop("amax", lambda x, dim, keepdim: jnp.max(x, axis=dim, keepdims=keepdim), "AmaxBackward0",
               jvp=_amax_jvp)
_amin = defop("amin", lambda x, dim, keepdim: jnp.min(x, axis=dim, keepdims=keepdim), "AminBackward0",
               jvp=_amax_jvp)
def _arg_errors(name):
    return {"b": (RuntimeError, f"{name}(): does not support bool input"),
            "c": (RuntimeError, f"{name}(): does not support complex input")}


def _argext(f):
    def fn(x, dim, keepdim):
        if x.ndim == 0:  # dim 0 (or -1) of a 0-d tensor: the one element
            return jnp.zeros((), jnp.int64)
        return f(x, axis=dim, keepdims=keepdim).astype(jnp.int64)
    return fn


_argmax = defop("argmax", _argext(jnp.argmax), None, errors=_arg_errors("argmax"))
_argmin = defop("argmin", _argext(jnp.argmin), None, errors=_arg_errors("argmin"))

def return_type(name: str, fields=("values", "indices")) -> type:
    """A namedtuple printed as PyTorch prints ``torch.return_types.<name>``."""
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"funcgrad.return_types.{name}(\n{body})"
    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                               "__module__": "funcgrad.return_types"})
    return cls


max_result = return_type("max")
min_result = return_type("min")


def _reduce_minmax(input, dim, keepdim, other, is_max):
    if isinstance(dim, Tensor):  # max(a, b)
        other, dim = dim, DIM
    if other is not None:
        return maximum(input, other) if is_max else minimum(input, other)
    if dim is DIM:  # (None given is no int dim: the parser's TypeError, from _one_dim)
        if input.numel() == 0:
            raise RuntimeError(f"{'max' if is_max else 'min'}(): Expected reduction dim to be "
                               f"specified for input.numel() == 0. Specify the reduction dim "
                               f"with the 'dim' argument.")
        return apply(_max_all if is_max else _min_all, input)
    d = _one_dim(dim, input.ndim)
    v, i = apply(_max_d if is_max else _min_d, input, dim=d if input.ndim else None,
                 keepdim=bool(keepdim))
    return (max_result if is_max else min_result)(v, i)


@export("max")
def max(input, dim=DIM, keepdim=False, *, other=None):
    """``max()`` → value (``MaxBackward1``); ``max(dim)`` → ``(values, indices)`` (``MaxBackward0``);
    ``max(a, b)`` → ``maximum``."""
    return _reduce_minmax(input, dim, keepdim, other, True)


@export("min")
def min(input, dim=DIM, keepdim=False, *, other=None):
    """``min()``, ``min(dim)`` → ``(values, indices)``, ``min(a, b)``."""
    return _reduce_minmax(input, dim, keepdim, other, False)


def _same_as_input(r, o):  # amax/amin's out= check
    if r.dtype is not o.dtype:
        return (f"Expected the dtype for input and out to match, but got {_scalar_type_name(r.dtype)} for "
                f"input's dtype and {_scalar_type_name(o.dtype)} for out's dtype.")
    return None


@export("amax")
def amax(input, dim=(), keepdim=False, *, out=None) -> Tensor:
    _check_out_grad(out, "amax", input)
    r = apply(_amax, input, dim=_dims(dim, input.ndim), keepdim=bool(keepdim))
    return _out(r, out, check=_same_as_input)


@export("amin")
def amin(input, dim=(), keepdim=False, *, out=None) -> Tensor:
    _check_out_grad(out, "amin", input)
    r = apply(_amin, input, dim=_dims(dim, input.ndim), keepdim=bool(keepdim))
    return _out(r, out, check=_same_as_input)


def _argext_call(op, name, input, dim, keepdim):
    if dim is None and input.numel() == 0:
        raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
    d = None if dim is None else _one_dim(dim, input.ndim)
    return apply(op, input, dim=d, keepdim=bool(keepdim))  # (no dim: every dim kept, as size 1)


@export("argmax")
def argmax(input, dim=None, keepdim=False) -> Tensor:
    """Index of the maximum (flattened when ``dim`` is None); not differentiable."""
    return _argext_call(_argmax, "argmax", input, dim, keepdim)


@export("argmin")
def argmin(input, dim=None, keepdim=False) -> Tensor:
    """Index of the minimum (flattened when ``dim`` is None); not differentiable."""
    return _argext_call(_argmin, "argmin", input, dim, keepdim)


# ---- prod -----------------------------------------------------------------------------------------
def _prod(x, *, dim, keepdim, dtype):
    return jnp.prod(x, axis=dim, keepdims=keepdim, dtype=_acc_dtype(x, dtype))


def _prod_weights(x, r, *, dim, keepdim, two_zeros_vanish):
    """PyTorch's prod_backward as d result / d self (the gradient is ``grad * weights``): result /
    self when the input holds no zero at all (an inf gives inf / inf = nan, and the rounding is a
    division's, not a product of the others'); with a zero anywhere, prod_safe_zeros_backward's
    exclusive products along dim, or zeros for a whole reduction with two or more zeros when
    grad mode is off (``two_zeros_vanish``). ``r`` is the result, or a function giving it (the
    grad-mode formula differentiates it). Branches by ``lax.cond``: a formula not taken must not
    meet a cotangent (0 * inf = nan)."""
    axis = 0 if dim is None else dim
    xs = x.reshape(-1) if dim is None else x
    n = xs.shape[axis]
    zeros = jnp.sum(xs == 0)

    def divide():
        res = r() if callable(r) else r
        res = res.reshape(()) if dim is None else (res if keepdim else jnp.expand_dims(res, dim))
        return _div(jnp.broadcast_to(res, xs.shape), xs)

    def safe():  # (cumprod: the op, so its own derivative is PyTorch's too)
        cumprod = _cumprod.traced((("dim", axis), ("dtype", None)), None, 1)
        ones = jnp.ones_like(jax.lax.slice_in_dim(xs, 0, 1, axis=axis))
        before = cumprod(jnp.concatenate([ones, jax.lax.slice_in_dim(xs, 0, n - 1, axis=axis)], axis))
        after = jnp.flip(cumprod(jnp.concatenate(
            [ones, jnp.flip(jax.lax.slice_in_dim(xs, 1, n, axis=axis), axis)], axis)), axis)
        return before * after

    def with_zero():
        if dim is None and two_zeros_vanish:
            return jax.lax.cond(zeros > 1, lambda: jnp.zeros_like(xs), safe)
        return safe()
    w = jax.lax.cond(zeros == 0, divide, with_zero)
    return w.reshape(x.shape)


def _prod_jvp(primals, tangents, out, *, dim, keepdim, dtype):
    (x,), (t,) = primals, tangents
    x, t = x.astype(out.dtype), t.astype(out.dtype)
    if x.ndim == 0:
        return t
    if x.size == 0:  # an empty product is 1 whatever the (no) elements
        return jnp.zeros(out.shape, out.dtype)
    w = _prod_weights(x, out, dim=dim, keepdim=keepdim, two_zeros_vanish=True)
    return jnp.sum(t * w, axis=dim, keepdims=keepdim).astype(out.dtype)


def _prod_vjp(primals, g, *, grad_mode, dim, keepdim, dtype):
    # grad mode off: the jvp slot's transpose; on (create_graph): the formula PyTorch records,
    # whose result is the op itself again (its second derivative is PyTorch's)
    (x0,) = primals
    fwd = _prod0.traced((("dim", dim), ("keepdim", keepdim), ("dtype", dtype)), None, 1)
    if not grad_mode:
        return jax.vjp(fwd, x0)[1](g)
    if x0.ndim == 0:
        return (g.astype(x0.dtype),)
    if x0.size == 0:
        return (jnp.zeros(x0.shape, x0.dtype),)
    x = x0.astype(g.dtype)
    w = _prod_weights(x, lambda: fwd(x0).astype(g.dtype), dim=dim, keepdim=keepdim, two_zeros_vanish=False)
    gb = g.reshape(()) if dim is None else (g if keepdim else jnp.expand_dims(g, dim))
    return ((gb * w).astype(x0.dtype),)


_prod0 = defop("prod", _prod, "ProdBackward0", jvp=_prod_jvp, vjp=_prod_vjp)
_prod1 = defop("prod_dim", _prod, "ProdBackward1", jvp=_prod_jvp, vjp=_prod_vjp)


@export("prod")
def prod(input: Tensor, dim: int | None = DIM, keepdim: bool = False, *, dtype=None,
         out=None) -> Tensor:
    """Product of all elements (``ProdBackward0``) or over one ``dim`` (``ProdBackward1``).

    >>> import funcgrad
    >>> funcgrad.tensor([[1, 2], [3, 4]]).prod(-1)
    tensor([ 2, 12])
    """
    _check_out_grad(out, "prod", input)
    if dtype is None and out is not None:  # (PyTorch's computes in out's dtype)
        dtype = out.dtype
    dt = None if dtype is None else to_dtype(dtype).np
    if dim is DIM:  # (None given is no int dim: the parser's TypeError, from _one_dim)
        return _out(apply(_prod0, input, dim=None, keepdim=False, dtype=dt), out)
    d = _one_dim(dim, input.ndim)
    return _out(apply(_prod1, input, dim=d if input.ndim else None, keepdim=bool(keepdim),
                      dtype=dt), out)


# ---- var / std ------------------------------------------------------------------------------------
def _var(x, *, dim, correction, keepdim):
    n = x.size if dim is None else int(np_prod([x.shape[d] for d in dim]))
    d = x - jnp.mean(x, axis=dim, keepdims=True)
    s = jnp.sum(jnp.real(d * jnp.conj(d)), axis=dim, keepdims=keepdim)
    return s / jnp.maximum(n - correction, 0)


def _safe_sqrt(v):
    # PyTorch's std backward masks result == 0 to a zero gradient (not inf * 0 = nan)
    pos = v > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, v, 1)), v * 0)  # v * 0 keeps nan


def _std(x, **kw):
    return _safe_sqrt(_var(x, **kw))


def np_prod(xs):
    r = 1
    for v in xs:
        r *= v
    return r


_var_op = defop("var", _var, "VarBackward0")
_std_op = defop("std", _std, "StdBackward0")
_var_mean_op = defop("var_mean", lambda x, **kw: (
    _var(x, **kw), jnp.mean(x, axis=kw["dim"], keepdims=kw["keepdim"])), "VarMeanBackward0",
    diff_outputs=(0, 1))
_std_mean_op = defop("std_mean", lambda x, **kw: (
    _std(x, **kw), jnp.mean(x, axis=kw["dim"], keepdims=kw["keepdim"])), "StdMeanBackward0",
    diff_outputs=(0, 1))


def _var_args(name, input, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):  # var(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(correction=int, unbiased=bool, )")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if correction is None:
        correction = 0 if unbiased is False else 1
    dims = _dims(dim, input.ndim)
    if input.ndim == 0:
        dims = None
    n = input.numel() if dims is None else np_prod([input.shape[d] for d in dims])
    if n - correction <= 0:
        import warnings
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    return dict(dim=dims, correction=correction, keepdim=bool(keepdim))


@export("var")
def var(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, out=None) -> Tensor:
    """Variance over ``dim`` (all by default) with Bessel's ``correction`` (1, or 0 when
    ``unbiased=False``).

    >>> import funcgrad
    >>> funcgrad.tensor([1.0, 2.0, 4.0]).var()
    tensor(2.3333)
    """
    return _out(apply(_var_op, input, **_var_args("var", input, dim, unbiased, keepdim,
                                                  correction)), out)


@export("std")
def std(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, out=None) -> Tensor:
    """Standard deviation (see :func:`var`); its gradient is 0 where the result is 0."""
    return _out(apply(_std_op, input, **_var_args("std", input, dim, unbiased, keepdim,
                                                  correction)), out)


@export("var_mean", method=False)
def var_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple:
    """``(var, mean)`` in one op (``VarMeanBackward0``)."""
    return apply(_var_mean_op, input, **_var_args("var_mean", input, dim, unbiased, keepdim,
                                                  correction))


@export("std_mean", method=False)
def std_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple:
    """``(std, mean)`` in one op (``StdMeanBackward0``)."""
    return apply(_std_mean_op, input, **_var_args("std_mean", input, dim, unbiased, keepdim,
                                                  correction))


# (torch.norm / Tensor.norm live with the linear algebra in decomp.py)


# ---- logsumexp, nansum, nanmean -------------------------------------------------------------------
def _logsumexp(x, *, dim, keepdim):
    import jax
    return jax.nn.logsumexp(x, axis=dim, keepdims=keepdim)


_logsumexp_op = defop("logsumexp", _logsumexp, "LogsumexpBackward0", promote="float")


@export("logsumexp")
def logsumexp(input: Tensor, dim, keepdim: bool = False, *, out=None) -> Tensor:
    """``log(sum(exp(input), dim))`` computed stably; integer inputs give the default float.

    >>> import funcgrad
    >>> funcgrad.tensor([0.0, 0.0]).logsumexp(0)
    tensor(0.6931)
    """
    if dim is None:  # (int[1] dim, not sum's int[1]? dim)
        raise TypeError("argument 'dim' must be tuple of ints, not NoneType")
    _check_out_grad(out, "logsumexp", input)
    dims = _dims(dim, input.ndim)  # (checked on a 0-d input too, then over no axis)
    return _out(apply(_logsumexp_op, input, dim=dims if input.ndim else None, keepdim=bool(keepdim)), out,
                check=_floating_out)


def _floating_out(r, o):  # logsumexp's out= check
    if o.dtype._kind not in "fc":
        return ("logsumexp(): Expected floating point type for result tensor, but got: "
                f"{_scalar_type_name(o.dtype)}")
    return None


def _nansum(x, *, dim, keepdim, dtype):
    if jnp.issubdtype(x.dtype, jnp.inexact):
        x = jnp.where(jnp.isnan(x), jnp.zeros((), x.dtype), x)
    return jnp.sum(x, axis=dim, keepdims=keepdim, dtype=_acc_dtype(x, dtype))


_nansum_op = defop("nansum", _nansum, "NansumBackward0")


@export("nansum")
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum treating nan as 0 (their gradient is 0)."""
    dt = None if dtype is None else to_dtype(dtype).np
    dims = _dims(dim, input.ndim)  # (as logsumexp's)
    return apply(_nansum_op, input, dim=dims if input.ndim else None, keepdim=bool(keepdim), dtype=dt)


@export("nanmean")
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean of the non-nan elements: ``nansum / count`` (``DivBackward0``, as PyTorch)."""
    if dtype is None and not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_scalar_name(input.dtype)}")
    if dtype is not None:
        input = input.to(to_dtype(dtype))
    cnt = sum(logical_not(isnan(input)), dim, keepdim)
    return nansum(input, dim, keepdim) / cnt


# ---- any / all / count_nonzero / aminmax ----------------------------------------------------------
def _bool_out(r, x):
    return r.astype(jnp.uint8) if x.dtype == jnp.uint8 else r


def _truth_host(np_fn):
    def host(x, dim, keepdim):
        host_exact(x, reads=True)
        r = np.asarray(np_fn(x, axis=dim, keepdims=keepdim))
        return r.astype(np.uint8) if x.dtype == np.uint8 else r
    return host


_any = defop("any", lambda x, dim, keepdim: _bool_out(jnp.any(x, axis=dim, keepdims=keepdim), x),
             host=_truth_host(np.any))
_all = defop("all", lambda x, dim, keepdim: _bool_out(jnp.all(x, axis=dim, keepdims=keepdim), x),
             host=_truth_host(np.all))
_count_nonzero = defop("count_nonzero", lambda x, dim: jnp.count_nonzero(x, axis=dim).astype(
    jnp.int64))


def _truth_dims(dim, ndim):
    """any/all's dims: PyTorch's any(dim=()) reduces over no dim (sum's ``()`` is every dim)."""
    dims = () if isinstance(dim, (tuple, list)) and not dim else _dims(dim, ndim)
    return dims if ndim else None  # (checked on a 0-d input too, then over no axis)


def _truth_out(name):
    def check(r, o):  # any/all write bool or uint8
        if o.dtype.name not in ("bool", "uint8"):
            return f"{name} only supports bool tensor for result, got: {_scalar_type_name(o.dtype)}"
        return None
    return check


@export("any")
def any(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """True if any element (over ``dim``) is nonzero; bool result (uint8 for uint8 input)."""
    return _out(apply(_any, input, dim=_truth_dims(dim, input.ndim), keepdim=bool(keepdim)), out,
                check=_truth_out("any"))


@export("all")
def all(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """True if every element (over ``dim``) is nonzero."""
    return _out(apply(_all, input, dim=_truth_dims(dim, input.ndim), keepdim=bool(keepdim)), out,
                check=_truth_out("all"))


@export("count_nonzero")
def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """Number of nonzero elements (over ``dim``), int64.

    >>> import funcgrad
    >>> funcgrad.count_nonzero(funcgrad.tensor([[1, 0], [2, 0]]), dim=0)
    tensor([2, 0])
    """
    # (a bool in a list of dims counts as its int, as PyTorch unpacks it; a 0-d input: over all)
    return apply(_count_nonzero, input, dim=_dims(dim, input.ndim) or None)


aminmax_result = return_type("aminmax", ("min", "max"))
_aminmax = defop("aminmax", lambda x, dim, keepdim: (
    jnp.min(x, axis=dim, keepdims=keepdim), jnp.max(x, axis=dim, keepdims=keepdim)),
    "AminmaxBackward0", diff_outputs=(0, 1),
    # PyTorch: amin's and amax's formula for each output (a nan row: 0 / 0 = nan)
    jvp=lambda p, t, out, dim, keepdim: tuple(_amax_jvp(p, t, o, dim=dim, keepdim=keepdim) for o in out))


@export("aminmax")
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False):
    """``(min, max)`` in one pass, a ``return_types.aminmax`` namedtuple."""
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        d = None
    else:
        d = _one_dim(dim, input.ndim)  # (checked on a 0-d input too, then over no axis)
        d = (d,) if input.ndim else None
    return aminmax_result(*apply(_aminmax, input, dim=d, keepdim=bool(keepdim)))


# ---- scans ----------------------------------------------------------------------------------------
def _scan(f):
    def fn(x, *, dim, dtype):
        if dtype is not None:
            x = x.astype(dtype)
        elif jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_:
            x = x.astype(jnp.int64)
        return x if x.ndim == 0 else f(x, axis=dim)
    return fn


def _cumlogsumexp(x, axis):
    return jax.lax.cumlogsumexp(x, axis=axis)


_cumsum = defop("cumsum", _scan(jnp.cumsum), "CumsumBackward0")
def _cumprod_jvp(primals, tangents, out, *, dim, dtype):
    # PyTorch's cumprod_backward (its O(n) path), stated as the tangent map jax transposes:
    # without a zero anywhere in the input, reversed_cumsum(grad * result) / self (so nan/inf
    # elements spread nan where jax's scan gives ±inf or finite values); with a zero, the masked
    # formulas: before the first zero of a slice as above, at the first zero the product of the
    # elements up to the next zero, elsewhere 0. The ``where`` factors are placed so that the
    # transpose masks exactly what PyTorch masks (a masked inf gives 0, not inf * 0 = nan).
    (x,), (t,) = primals, tangents
    if x.ndim == 0 or x.shape[dim] <= 1:
        return t.astype(out.dtype)
    x, t = x.astype(out.dtype), t.astype(out.dtype)

    def no_zero(t):
        return out * jnp.cumsum(t / x, axis=dim)

    def with_zero(t):
        cz = jnp.cumsum(x == 0, axis=dim)
        m0, m1 = cz == 0, cz == 1
        before = jnp.where(m0, out, 0) * jnp.cumsum(jnp.where(m0, t / jnp.where(m0, x, 1), 0), axis=dim)
        first = jnp.argmax(m1, axis=dim, keepdims=True)  # 0 where a slice has no zero
        fzm = (jax.lax.broadcasted_iota(jnp.int32, x.shape, dim) == first) & m1
        between = m1 & ~fzm
        cp = jnp.cumprod(jnp.where(between, x, 1), axis=dim)
        prev = jnp.take_along_axis(out, jnp.maximum(first - 1, 0), axis=dim)
        p = jnp.where(first == 0, 1, prev)
        t_z = jnp.sum(jnp.where(fzm, t, 0), axis=dim, keepdims=True)
        return before + jnp.where(m1, cp * (p * t_z), 0)
    return jax.lax.cond(jnp.any(x == 0), with_zero, no_zero, t)


def _div(a, b):
    return a / b


# PyTorch's div backward: grad / other, and -grad * ((self / other) / other) for other (its
# rounding at huge/inf values, where jax's -grad * self / other**2 overflows differently)
_div = jax.custom_jvp(_div)
_div.defjvp(lambda p, t: (_div(*p), t[0] / p[1] - t[1] * ((p[0] / p[1]) / p[1])))


@jax.custom_jvp
def _prefix_prods(x):
    """``p[..., k] = prod(x[..., :k])`` (1 at k = 0) along the last axis, each with PyTorch's
    prod backward: ``result / input`` unless the slice ``x[..., :k]`` (every batch element: it is
    one tensor there) holds a zero, then the products of the other elements."""
    return jnp.concatenate([jnp.ones_like(x[..., :1]), jnp.cumprod(x[..., :-1], axis=-1)], -1)


@_prefix_prods.defjvp
def _prefix_prods_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    until = _prefix_prods(x)
    n = x.shape[-1]
    k, i = jnp.arange(n)[:, None], jnp.arange(n)[None, :]  # [k, i]: element i of slice k
    zero_seen = jnp.any(x == 0, axis=tuple(range(x.ndim - 1)))  # per position, over the batch
    zero_upto = jnp.concatenate([jnp.zeros(1, bool), jnp.cumsum(zero_seen)[:-1] > 0])  # [k]
    mid = jnp.cumprod(jnp.where(i > k, x[..., None, :], 1), axis=-1)  # [i, j]: prod x(i, j]
    # others[k, i] = prod_{m < k, m != i} x_m = until[i] * prod x(i, k-1]
    others = until[..., None, :] * jnp.swapaxes(jnp.take(mid, jnp.maximum(k[:, 0] - 1, 0), axis=-1), -1, -2)
    w = jnp.where(zero_upto[:, None], others, until[..., :, None] / x[..., None, :])
    # (w masked before the product: the transpose multiplies by w, and w is inf/nan where unused)
    return until, jnp.sum(jnp.where(i < k, w, 0) * t[..., None, :], axis=-1)


def _cumprod_vjp(primals, g, *, grad_mode, dim, dtype):
    # PyTorch's cumprod_backward. Grad mode off: its O(n) formula (the jvp slot's transpose).
    # Grad mode on: without a zero in the input reversed_cumsum(result * grad) / self; with one,
    # its O(n^2) formula grad_k = sum_{j >= k} grad_j * prod(self[:k]) * cumprod(self[k+1:])[j],
    # whose prod and cumprod are differentiated with their own PyTorch formulas (prod: result /
    # self), so the second derivative is PyTorch's.
    (x0,) = primals
    fwd = _cumprod.traced((("dim", dim), ("dtype", dtype)), None, 1)
    if not grad_mode:
        return jax.vjp(fwd, x0)[1](g)
    if x0.ndim == 0 or x0.shape[dim] <= 1:
        return (g,)
    x = x0.astype(g.dtype)

    def no_zero():
        # the result is computed in the branch: a zero cotangent reaching it from the branch not
        # taken would still meet cumprod's backward (0 * inf = nan)
        return _div(jnp.flip(jnp.cumsum(jnp.flip(fwd(x0) * g, dim), dim), dim), x)

    def with_zero():
        xs, gs = jnp.moveaxis(x, dim, -1), jnp.moveaxis(g, dim, -1)
        n = xs.shape[-1]
        k, j = jnp.arange(n)[:, None], jnp.arange(n)[None, :]
        after = _cumprod.traced((("dim", xs.ndim), ("dtype", None)), None, 1)(
            jnp.where(j > k, xs[..., None, :], 1))  # [k, j]: cumprod(self[k+1:]) (1 for j <= k)
        until = _prefix_prods(xs)
        omitted = jnp.where(j >= k, jnp.where(k == 0, 1, until[..., :, None]) * after, 0)
        return jnp.moveaxis(jnp.sum(gs[..., None, :] * omitted, axis=-1), -1, dim)
    return (jax.lax.cond(jnp.any(x == 0), with_zero, no_zero),)


_cumprod = defop("cumprod", _scan(jnp.cumprod), "CumprodBackward0", jvp=_cumprod_jvp, vjp=_cumprod_vjp)
def _logcumsumexp_fn(x, dim):
    return x if x.ndim == 0 else _cumlogsumexp(x, dim)


def _logcumsumexp_jvp(primals, tangents, out, dim):
    # PyTorch's logcumsumexp_backward works in log space: exp(self + reverse_logcumsumexp(
    # log|grad| - result)), so an input of +inf gets nan (inf - inf) and a finite or -inf input
    # after an +inf (result +inf there) gets exp(-inf) = 0, where jax's scan passes finite values.
    # Scaling the tangent by those factors before jax's own rule scales the gradient after it.
    (x,), (t,) = primals, tangents
    nan_at_inf = jnp.where(x == jnp.inf, jnp.nan, 1).astype(t.dtype)
    t = jnp.where((out == jnp.inf) & (x != jnp.inf), 0, t) * nan_at_inf
    return jax.jvp(lambda v: _logcumsumexp_fn(v, dim), (x,), (t,))[1]


def _logcumsumexp_backward(x, out, g, dim):
    # PyTorch's logcumsumexp_backward, in log space and not linear in grad (log|grad|; a nan
    # grad is neither > 0 nor < 0, so it counts as 0): exp(reverse_logcumsumexp(log grad+ -
    # result) + self) - exp(... log grad- ...)
    if g.ndim == 0 or g.size == 0:
        return g

    def rev(v):
        return jnp.flip(_torch_logcumsumexp(jnp.flip(v, dim), dim), dim)
    lowest = jnp.finfo(g.dtype).min
    log_abs = jnp.log(jnp.abs(g))
    pos, neg = jnp.where(g > 0, log_abs, lowest), jnp.where(g < 0, log_abs, lowest)
    return jnp.exp(rev(pos - out) + x) - jnp.exp(rev(neg - out) + x)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def _torch_logcumsumexp(x, dim):
    """logcumsumexp whose backward is PyTorch's formula at every order (the formula's own
    logcumsumexp is this function), for the recorded backward of the op."""
    return _cumlogsumexp(x, dim)


def _torch_logcumsumexp_fwd(x, dim):
    out = _torch_logcumsumexp(x, dim)  # (itself: the result's derivative is PyTorch's too)
    return out, (x, out)


_torch_logcumsumexp.defvjp(_torch_logcumsumexp_fwd,
                           lambda dim, res, g: (_logcumsumexp_backward(res[0], res[1], g, dim),))


def _logcumsumexp_vjp(primals, g, *, grad_mode, dim):
    (x,) = primals
    if jnp.iscomplexobj(g):  # PyTorch's complex branch: the linear formula jax derives
        return jax.vjp(_logcumsumexp.traced((("dim", dim),), None, 1), x)[1](g)
    if x.ndim == 0:
        return (g,)
    return (_logcumsumexp_backward(x, _torch_logcumsumexp(x, dim), g, dim),)


_logcumsumexp = defop("logcumsumexp", _logcumsumexp_fn, "LogcumsumexpBackward0", jvp=_logcumsumexp_jvp,
                      vjp=_logcumsumexp_vjp, accepts="fc", kernel="logcumsumexp_out_cpu")


# (cumsum, cumprod, logcumsumexp: frameless frontends of _parser.SCHEMAS, see _parser.rerun)
@export("cumsum")
def cumsum(input: Tensor = REQUIRED, dim: int = REQUIRED, *args, dtype=None, out=None, **numpy) -> Tensor:
    """Cumulative sum along ``dim`` (integers accumulate in int64).

    >>> import funcgrad
    >>> funcgrad.tensor([1, 2, 3]).cumsum(0)
    tensor([1, 3, 6])
    """
    if args or numpy:  # (NumPy's names, more arguments, out= to the method: as PyTorch's parser reads them)
        return _rerun(cumsum)
    try:
        _check_out_grad(out, "cumsum", input)
        dt = dtype if dtype is not None or out is None else out.dtype  # (PyTorch's computes in out's dtype)
        dt = None if dt is None else to_dtype(dt).np
        return _out(apply(_cumsum, input, dim=_wrap_dim(dim, input.ndim), dtype=dt), out)
    except TypeError:  # (PyTorch's, where its parser refuses the call)
        _refuse(cumsum)
        raise


@export("cumprod")
def cumprod(input: Tensor = REQUIRED, dim: int = REQUIRED, *args, dtype=None, out=None, **numpy) -> Tensor:
    """Cumulative product along ``dim``; the gradient is exact with zeros in the input."""
    if args or numpy:
        return _rerun(cumprod)
    try:
        _check_out_grad(out, "cumprod", input)
        dt = dtype if dtype is not None or out is None else out.dtype  # (PyTorch's computes in out's dtype)
        dt = None if dt is None else to_dtype(dt).np
        return _out(apply(_cumprod, input, dim=_wrap_dim(dim, input.ndim), dtype=dt), out)
    except TypeError:
        _refuse(cumprod)
        raise


@export("logcumsumexp")
def logcumsumexp(input: Tensor = REQUIRED, dim: int = REQUIRED, *args, out=None, **numpy) -> Tensor:
    """``log(cumsum(exp(input)))`` computed stably."""
    if args or numpy:
        return _rerun(logcumsumexp)
    try:
        return _out(apply(_logcumsumexp, input, dim=_wrap_dim(dim, input.ndim)), out, check=_same_scalar_type)
    except TypeError:
        _refuse(logcumsumexp)
        raise


def _same_scalar_type(r, o):  # logcumsumexp's, cummax's and cummin's out= check
    if r.dtype is not o.dtype:
        return f"expected scalar_type {_scalar_type_name(r.dtype)} but found {_scalar_type_name(o.dtype)}"
    return None


def _scan_inplace(f):
    def m(self, dim, *, dtype=None):
        return self._inplace(f, dim, dtype=dtype)
    return m


export("cumsum_", function=False)(_scan_inplace(cumsum))
export("cumprod_", function=False)(_scan_inplace(cumprod))
