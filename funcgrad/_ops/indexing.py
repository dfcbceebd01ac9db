"""Op table — indexing ops: index_select, gather/scatter, masked_*, index_*, take, unique.

Index operands are non-differentiable op arguments (``diff`` excludes them), so their values
are saved as-is and no gradient flows to them. JAX clamps or fills out-of-range indices
silently; PyTorch raises, so indices are bounds-checked here whenever they are concrete.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import _broadcast, _meta
from .._host import host_exact, host_scalar
from .._tensor import _is_tracer, _wrap_dim
from ._registry import NotImplementedGrad, Tensor, apply, defop, export, inplace_method
from ._registry import same_dtype
from ._registry import write_out as _out
from .shape import nonzero


def _check_index_dtype(index, fname):
    if not isinstance(index, Tensor):
        raise TypeError(f"{fname}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype._kind != "i" or index.dtype.name == "uint8":
        raise RuntimeError(f"{fname}(): Expected dtype int32/int64 for index")


def _bounds(index, size, dim, kind="dim"):
    """Raise PyTorch's error if a concrete ``index`` has an entry outside ``[-size, size)``."""
    v = index._value
    if _is_tracer(v) or v.size == 0 or type(v) is _meta.MetaArray:  # (no values to check)
        return
    a = np.asarray(v)
    lo = 0 if kind in ("gather", "scatter") else -size
    bad = (a < lo) | (a >= size)
    if bad.any():
        i = int(a[bad].flat[0])
        if kind == "take":
            raise IndexError(f"out of range: tried to access index {i} on a tensor of {size} elements.")
        if kind == "select":
            raise IndexError("index out of range in self")
        raise RuntimeError(f"index {i} is out of bounds for dimension {dim} with size {size}")


# ================================ index_select / take =========================================
_index_select = defop("index_select", lambda x, i, dim: jnp.take(x, i, axis=dim, mode="clip"),
                      "IndexSelectBackward0", diff=(0,), linear=True)
_take = defop("take", lambda x, i: jnp.take(x.ravel(), i, mode="clip"), "TakeBackward0", diff=(0,),
              linear=True)


def _take_along_fn(x, i, dim):
    if dim is None:
        return jnp.take(x.ravel(), i.ravel(), mode="clip")
    shape = list(np.broadcast_shapes(tuple(x.shape[:dim] + (1,) + x.shape[dim + 1:]),
                                     tuple(i.shape[:dim] + (1,) + i.shape[dim + 1:])))
    xs, is_ = list(shape), list(shape)
    xs[dim], is_[dim] = x.shape[dim], i.shape[dim]
    x = jnp.broadcast_to(x, tuple(xs))
    i = jnp.broadcast_to(i, tuple(is_))
    return jnp.take_along_axis(x, jnp.where(i < 0, i + x.shape[dim], i), axis=dim)


_take_along = defop("take_along_dim", _take_along_fn, "GatherBackward0", diff=(0,), linear=True)


def _same_scalar_type(name):
    def check(r, o):
        return None if r.dtype is o.dtype else f"{name}(): self and result must have the same scalar type"
    return check


@export("index_select")
def index_select(input, dim, index, *, out=None) -> Tensor:
    """Entries of ``input`` along ``dim`` at the 1-D ``index`` (``IndexSelectBackward0``).

    >>> import funcgrad
    >>> funcgrad.arange(6).view(2, 3).index_select(1, funcgrad.tensor([2, 0]))
    tensor([[2, 0],
            [5, 3]])
    """
    if not isinstance(index, Tensor) or index.dtype._kind != "i":
        raise RuntimeError("index_select(): Expected dtype int32/int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = _wrap_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    v = index._value
    if not _is_tracer(v) and v.size and type(v) is not _meta.MetaArray:
        a = np.asarray(v)
        if (a < 0).any() or (a >= size).any():
            if d == 0 or input.ndim <= 1:  # PyTorch 2.13's CPU kernel: dim 0 / 1-D path
                raise IndexError("index out of range in self")
            bad = int(a[(a < 0) | (a >= size)].flat[0])
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
    x = input if input.ndim else input.reshape(1)
    r = apply(_index_select, x, index.reshape(-1), dim=d)
    return _out(r if input.ndim else r.reshape(()), out, check=_same_scalar_type("index_select"))


@export("take")
def take(input, index) -> Tensor:
    """Entries of the flattened ``input`` at ``index`` (result has index's shape)."""
    _check_index_dtype(index, "take")
    n = input.numel()
    _bounds(index, n, 0, "take")
    return apply(_take, input, jnp.where(index._value < 0, index._value + n, index._value))


@export("take_along_dim")
def take_along_dim(input, indices, dim=None, *, out=None) -> Tensor:
    """``gather`` with broadcasting; ``dim=None`` indexes the flattened input (``GatherBackward0``)."""
    _check_index_dtype(indices, "take_along_dim")
    if dim is None:
        _bounds(indices, input.numel(), 0, "take")
        return _out(apply(_take_along, input, indices, dim=None), out, "gather", same_dtype)
    d = _wrap_dim(dim, input.ndim)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {input.ndim} dimensions for input, and {indices.ndim} "
                           f"dimensions for indices")
    _bounds(indices, input.shape[d], d)
    return _out(apply(_take_along, input, indices, dim=d), out, "gather", same_dtype)


# ================================ gather / scatter ============================================
def _grid(index, dim):
    """Full advanced-index tuple addressing ``index``'s positions, with ``index`` along ``dim``."""
    grids = list(jnp.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def _gather_fn(x, i, dim):
    return x[_grid(i, dim)]


def _scatter_fn(x, i, src, dim, how):
    src = jnp.broadcast_to(jnp.asarray(src, x.dtype), i.shape) if jnp.ndim(src) == 0 else \
        src[tuple(slice(0, s) for s in i.shape)].astype(x.dtype)
    at = x.at[_grid(i, dim)]
    if how == "set":
        return at.set(src)
    if how == "add":
        return at.add(src)
    if how == "multiply":
        return at.multiply(src)
    raise AssertionError(how)


def _scatter_reduce_fn(x, i, src, dim, reduce, include_self):
    src = src[tuple(slice(0, s) for s in i.shape)].astype(x.dtype)
    g = _grid(i, dim)
    if reduce in ("sum", "mean"):
        base = x if include_self else x.at[g].set(0)
        out = base.at[g].add(src)
        if reduce == "mean":
            cnt = jnp.zeros(x.shape, x.dtype).at[g].add(1) + (1 if include_self else 0)
            out = jnp.where(cnt > 0, out / jnp.where(cnt > 0, cnt, 1), x)
            if jnp.issubdtype(x.dtype, jnp.integer):
                out = out.astype(x.dtype)
        return out
    if reduce == "prod":
        return _sr_prod(x, i, src, dim, include_self)
    return _sr_extremum(x, i, src, dim, reduce, include_self)


# prod / amax / amin carry PyTorch's derivative formulas (scatter_reduce_backward): JAX has no
# scatter-multiply gradient for repeated indices, and its scatter-max splits ties differently
# when include_self=False. The jvps are linear in the tangents, so jax.vjp transposes them.
def _scattered(x, g):
    return jnp.zeros(x.shape, bool).at[g].set(True)


@functools.partial(jax.custom_jvp, nondiff_argnums=(3, 4))
def _sr_prod(x, i, src, dim, include_self):
    g = _grid(i, dim)
    base = x if include_self else x.at[g].set(1)
    return base.at[g].multiply(src)


@_sr_prod.defjvp
def _sr_prod_jvp(dim, include_self, primals, tangents):
    x, i, src = primals
    tx, _, ts = tangents
    g = _grid(i, dim)
    out = _sr_prod(x, i, src, dim, include_self)
    one = jnp.ones((), x.dtype)
    masked_self = jnp.where(x == 0, one, x)
    f_self = _sr_prod(masked_self, i, src, dim, include_self) / masked_self
    if not include_self:
        f_self = jnp.where(_scattered(x, g), 0, f_self)
    src_zero = src == 0
    n_zero = jnp.zeros(x.shape, x.dtype).at[g].add(src_zero.astype(x.dtype))[g]
    single = src_zero & (n_zero == 1)
    excl = _sr_prod(x, i, jnp.where(single, one, src), dim, include_self)[g]
    f_src = jnp.where(single, excl, out[g] / jnp.where(src_zero, one, src))
    t = jnp.zeros(x.shape, x.dtype).at[g].add(f_src * _tan(ts, src))
    return out, f_self * _tan(tx, x) + t


def _tan(t, like):
    # symbolic-zero tangents arrive as float0 / Zero: treat them as zeros
    return jnp.zeros(like.shape, like.dtype) if getattr(t, "dtype", None) == jax.dtypes.float0 \
        else t


@functools.partial(jax.custom_jvp, nondiff_argnums=(3, 4, 5))
def _sr_extremum(x, i, src, dim, reduce, include_self):
    g = _grid(i, dim)
    fill = {"amax": -jnp.inf, "amin": jnp.inf}[reduce]
    if jnp.issubdtype(x.dtype, jnp.integer):
        info = jnp.iinfo(x.dtype)
        fill = info.min if reduce == "amax" else info.max
    base = x if include_self else x.at[g].set(fill)
    return base.at[g].max(src) if reduce == "amax" else base.at[g].min(src)


@_sr_extremum.defjvp
def _sr_extremum_jvp(dim, reduce, include_self, primals, tangents):
    # ties share the gradient evenly; as PyTorch, ``self`` counts among the ties even when
    # include_self=False (its own share is then dropped)
    x, i, src = primals
    tx, _, ts = tangents
    g = _grid(i, dim)
    out = _sr_extremum(x, i, src, dim, reduce, include_self)
    self_is = (x == out).astype(x.dtype)
    src_is = (src == out[g]).astype(x.dtype)
    n = self_is.at[g].add(src_is)
    f_self = self_is if include_self else jnp.where(_scattered(x, g), 0, self_is)
    t = (f_self * _tan(tx, x)).at[g].add(src_is * _tan(ts, src))
    return out, t / n


_gather = defop("gather", _gather_fn, "GatherBackward0", diff=(0,), linear=True)
def _scatter_src_fn(x, i, src, *, dim, how, src_grad=False):
    return _scatter_fn(x, i, src, dim, how)


def _scatter_src_jvp(node):
    """scatter / scatter_add's derivative (jax's), except that PyTorch's src gradient is
    ``grad.gather(dim, index)``, the index's shape: for a src of another shape that requires grad
    its engine rejects it, and so does this slot when the backward is traced."""
    def jvp(primals, tangents, out, *, dim, how, src_grad=False):
        (x, i, src), (tx, _, ts) = primals, tangents
        if src_grad and tuple(i.shape) != tuple(src.shape):
            raise RuntimeError(f"Function {node} returned an invalid gradient at index 1 - got "
                               f"{list(i.shape)} but expected shape compatible with {list(src.shape)}")
        return jax.jvp(lambda a, b: _scatter_fn(a, i, b, dim, how), (x, src), (tx, ts))[1]
    return jvp


_scatter = defop("scatter", _scatter_src_fn, "ScatterBackward0", diff=(0, 2),
                 jvp=_scatter_src_jvp("ScatterBackward0"))
_scatter_value = defop("scatter_value", _scatter_fn, "ScatterBackward1", diff=(0,))
_scatter_legacy = defop("scatter_reduce_legacy", _scatter_fn, None)  # reduce=: not differentiable
_scatter_add = defop("scatter_add", _scatter_src_fn, "ScatterAddBackward0", diff=(0, 2),
                     jvp=_scatter_src_jvp("ScatterAddBackward0"))
_scatter_reduce = defop("scatter_reduce", _scatter_reduce_fn, "ScatterReduceBackward0", diff=(0, 2))


def _check_gather_shapes(input, index, dim, fname, src=None):
    if input.ndim != index.ndim and index.numel():
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if fname == 'gather' else 'self'} tensor")
    for k in range(index.ndim):
        if k != dim and index.shape[k] > input.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index.shape)} "
                               f"to be no larger than {'input' if fname == 'gather' else 'self'} "
                               f"{list(input.shape)} apart from dimension {dim}")
        if src is not None and index.shape[k] > src.shape[k]:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than src "
                               f"{list(src.shape)} apart from dimension {dim} ")
    _bounds(index, input.shape[dim] if input.ndim else 1, dim, "gather")


@export("gather")
def gather(input, dim, index, *, sparse_grad=False, out=None) -> Tensor:
    """``out[i][j] = input[i][index[i][j]]`` along ``dim`` (``GatherBackward0``).

    >>> import funcgrad
    >>> funcgrad.tensor([[1, 2], [3, 4]]).gather(1, funcgrad.tensor([[0, 0], [1, 0]]))
    tensor([[1, 1],
            [4, 3]])
    """
    _check_index_dtype(index, "gather")
    d = _wrap_dim(dim, input.ndim)
    _check_gather_shapes(input, index, d, "gather")
    return _out(apply(_gather, input, index, dim=d), out, check=same_dtype)


@export("scatter")
def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None) -> Tensor:
    """A copy of ``input`` with ``src`` (tensor or scalar) written at ``index`` along ``dim``."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing 1 required positional argument: 'src' or 'value'")
    _check_index_dtype(index, "scatter")
    d = _wrap_dim(dim, input.ndim)
    is_t = isinstance(src, Tensor)
    _check_gather_shapes(input, index, d, "scatter", src if is_t else None)
    if is_t and src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
        if is_t:
            import warnings
            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will "
                          "be removed in a future PyTorch release. Use torch.scatter_reduce instead "
                          "for more reduction options.", UserWarning, stacklevel=2)
        return _out(apply(_scatter_legacy, input, index, src, dim=d, how=reduce), out)
    if not is_t:
        return _out(apply(_scatter_value, input, index, src, dim=d, how="set"), out)
    return _out(apply(_scatter, input, index, src, dim=d, how="set", src_grad=src.requires_grad), out)


@export("scatter_add")
def scatter_add(input, dim, index, src, *, out=None) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (duplicates accumulate)."""
    _check_index_dtype(index, "scatter_add")
    d = _wrap_dim(dim, input.ndim)
    _check_gather_shapes(input, index, d, "scatter", src)
    return _out(apply(_scatter_add, input, index, src, dim=d, how="add",
                      src_grad=isinstance(src, Tensor) and src.requires_grad), out)


@export("scatter_reduce")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None) -> Tensor:
    """Reduce ``src`` into ``input`` at ``index``: ``'sum' 'prod' 'mean' 'amax' 'amin'``."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    _check_index_dtype(index, "scatter_reduce")
    d = _wrap_dim(dim, input.ndim)
    _check_gather_shapes(input, index, d, "scatter", src)
    return _out(apply(_scatter_reduce, input, index, src, dim=d, reduce=reduce,
                      include_self=bool(include_self)), out)


inplace_method("scatter_", scatter)
inplace_method("scatter_add_", scatter_add)
inplace_method("scatter_reduce_", scatter_reduce)


# ================================ index_add / copy / fill =====================================
def _index_fn(x, i, src, dim, how, alpha):
    at = x.at[(slice(None),) * dim + (i,)]
    if how == "fill":
        return at.set(jnp.asarray(src, x.dtype))
    src = jnp.asarray(src).astype(x.dtype)
    if how == "add":
        return at.add(src if alpha == 1 else alpha * src)
    return at.set(src)


_index_add = defop("index_add", _index_fn, "IndexAddBackward0", diff=(0, 2))
_index_copy = defop("index_copy", _index_fn, "IndexCopyBackward0", diff=(0, 2))
_index_fill = defop("index_fill", _index_fn, "IndexFillBackward0", diff=(0,))
_index_fill_t = defop("index_fill_tensor", _index_fn, "IndexFillBackward1", diff=(0, 2))


def _index_args(input, dim, index, fname, source=None):
    if not isinstance(index, Tensor) or index.dtype._kind != "i":
        raise RuntimeError(f"{fname}(): Expected dtype int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{fname}(): Index is supposed to be a vector")
    d = _wrap_dim(dim, input.ndim)
    _bounds(index, input.shape[d] if input.ndim else 1, d)
    if source is not None and isinstance(source, Tensor):
        want = list(input.shape)
        if want:
            want[d] = index.numel()
        if source.ndim and list(source.shape) != want:
            raise RuntimeError(f"{fname}(): Source/destination tensor must have same slice shapes. "
                               f"Destination slice shape: {list(input.shape)} at dimension {d} and "
                               f"source slice shape: {list(source.shape)} at dimension 0.")
    return d, index.reshape(-1)


@export("index_add")
def index_add(input, dim, index, source, *, alpha=1, out=None) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``."""
    d, i = _index_args(input, dim, index, "index_add", source)
    return _out(apply(_index_add, input, i, source, dim=d, how="add", alpha=alpha), out)


@export("index_copy")
def index_copy(input, dim, index, source, *, out=None) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` along ``dim`` replaced by ``source``."""
    d, i = _index_args(input, dim, index, "index_copy", source)
    return _out(apply(_index_copy, input, i, source, dim=d, how="copy", alpha=1), out)


@export("index_fill")
def index_fill(input, dim, index, value) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value``."""
    d, i = _index_args(input, dim, index, "index_fill")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor "
                               f"with {value.ndim} dimension(s).")
        return apply(_index_fill_t, input, i, value, dim=d, how="fill", alpha=1)
    return apply(_index_fill, input, i, value, dim=d, how="fill", alpha=1)


inplace_method("index_add_", index_add)
inplace_method("index_copy_", index_copy)
inplace_method("index_fill_", index_fill)


# ================================ masked ops ==================================================
def _masked_fill_fn(x, m, v):
    return jnp.where(m, jnp.asarray(v).astype(x.dtype), x)


def _masked_fill_host(x, m, v):
    if isinstance(v, np.ndarray):
        if v.dtype != x.dtype:
            raise TypeError("a value of another dtype: the kernel's cast")
    else:
        v = host_scalar(v, x.dtype)
    host_exact(x, v)
    return np.where(m, v, x)


_masked_fill = defop("masked_fill", _masked_fill_fn, "MaskedFillBackward0", diff=(0,),
                     host=_masked_fill_host)
_masked_fill_t = defop("masked_fill_tensor", _masked_fill_fn, "MaskedFillBackward1", diff=(0, 2),
                       host=_masked_fill_host)
_masked_select = defop("masked_select", lambda x, i, shape: jnp.broadcast_to(x, shape).ravel()[i],
                       "MaskedSelectBackward0", diff=(0,), linear=True)


def _check_mask(mask, fname):
    if not isinstance(mask, Tensor) or mask.dtype.name != "bool":
        dt = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        dt = {"float32": "float", "float64": "double", "int64": "long", "int32": "int"}.get(dt, dt)
        raise RuntimeError(f"{fname} only supports boolean masks, but got mask with dtype {dt}")


@export("masked_fill")
def masked_fill(input, mask, value) -> Tensor:
    """``input`` with ``value`` where the boolean ``mask`` (broadcast) is True.

    >>> import funcgrad
    >>> x = funcgrad.tensor([1., -2., 3.])
    >>> x.masked_fill(x < 0, 0.)
    tensor([1., 0., 3.])
    """
    try:
        return _masked_fill_impl(input, mask, value)
    except RuntimeError:  # (ATen's masked_fill expands the mask first: its error names it as tensor a)
        if isinstance(mask, Tensor):
            _broadcast.raise_mismatch((mask.shape, input.shape))
        raise


def _masked_fill_impl(input, mask, value) -> Tensor:  # (masked_fill_: a TensorIterator, self first)
    _check_mask(mask, "masked_fill_")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                               f"with {value.ndim} dimension(s).")
        return apply(_masked_fill_t, input, mask, value)
    return apply(_masked_fill, input, mask, value)


inplace_method("masked_fill_", _masked_fill_impl)


@export("masked_select")
def masked_select(input, mask, *, out=None) -> Tensor:
    """The 1-D tensor of the entries where ``mask`` (broadcast with input) is True (eager only)."""
    _check_mask(mask, "masked_select:")
    shape = _broadcast.infer_size(mask.shape, input.shape)  # (ATen: expand_outplace(mask, self))
    m = np.broadcast_to(np.asarray(mask._concrete("masked_select()")), shape)
    idx = jnp.asarray(np.flatnonzero(m))
    return _out(apply(_masked_select, input, idx, shape=shape), out, check=_same_scalar_type("masked_select"))


# ================================ data-dependent, not differentiable ==========================
@export("argwhere")
def argwhere(input) -> Tensor:
    """Indices of the non-zero entries, one row per entry (int64, eager only)."""
    return nonzero(input)


def _unique_values(input, vals):
    """``vals`` as a result of ``input``: PyTorch's unique ops record a node whose derivative is
    ``not_implemented`` (raising only where a backward needs it)."""
    return vals


def _unique_op(key: str, node: str, what: str):
    return defop(key, _unique_values, node, diff=(0,),
                 vjp=lambda primals, cot, *, grad_mode: (NotImplementedGrad(what), None))


_UNIQUE_NODES = {
    "unique": _unique_op("unique_values", "Unique2Backward0", "_unique2"),
    "unique_dim": _unique_op("unique_dim_values", "UniqueDimBackward0", "unique_dim"),
    "unique_consecutive": _unique_op("unique_consecutive_values", "UniqueConsecutiveBackward0",
                                     "unique_consecutive"),
}


def _unique_result(input, vals, kind):
    """The values output of a unique op: recorded on ``input`` where it requires grad."""
    out = Tensor._wrap(jnp.asarray(vals))
    if not input.requires_grad:
        return out
    return apply(_UNIQUE_NODES[kind], input, out)


@export("unique")
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Unique values (sorted), optionally with inverse indices and counts (eager only, no grad).

    >>> import funcgrad
    >>> funcgrad.unique(funcgrad.tensor([3, 1, 3]), return_counts=True)
    (tensor([1, 3]), tensor([1, 2]))
    """
    a = np.asarray(input._concrete("unique()"))
    if dim is None:
        vals, inv, cnt = np.unique(a.ravel(), return_inverse=True, return_counts=True)
        inv = inv.reshape(a.shape)
    else:
        d = _wrap_dim(dim, a.ndim)
        vals, inv, cnt = np.unique(a, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    res = [_unique_result(input, vals.astype(a.dtype), "unique" if dim is None else "unique_dim")]
    if return_inverse:
        res.append(Tensor._wrap(jnp.asarray(inv, jnp.int64)))
    if return_counts:
        res.append(Tensor._wrap(jnp.asarray(cnt, jnp.int64)))
    return res[0] if len(res) == 1 else tuple(res)


@export("unique_consecutive")
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (eager only, no grad)."""
    a = np.asarray(input._concrete("unique_consecutive()"))
    if dim is not None:
        raise NotImplementedError("unique_consecutive(dim=...) is not supported")
    flat = a.ravel()
    start = np.ones(flat.shape, bool)
    start[1:] = flat[1:] != flat[:-1]
    vals = flat[start]
    inv = np.cumsum(start) - 1
    cnt = np.diff(np.append(np.flatnonzero(start), flat.size))
    res = [_unique_result(input, vals.astype(a.dtype), "unique_consecutive")]
    if return_inverse:
        res.append(Tensor._wrap(jnp.asarray(inv.reshape(a.shape), jnp.int64)))
    if return_counts:
        res.append(Tensor._wrap(jnp.asarray(cnt, jnp.int64)))
    return res[0] if len(res) == 1 else tuple(res)
