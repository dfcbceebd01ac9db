"""Op table — shape and indexing: views (share storage), copies, cat/stack, get/setitem."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import _broadcast, _factories, _grad_mode, _meta, _strides, _tensor
from .._host import has_subnormal, host_exact
from .._errors import TracedValueError
from .._tensor import Size, _is_tracer, _scatter_fn, _wrap_dim
from . import _parser
from ._fanin import FanInOp
from ._registry import (OPS, REQUIRED, Tensor, apply, cast_dtype, defop, export, inplace_method, refuse,
                        rerun, write_out)


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    # symbolic dims (jax.export's batch dimension) pass through; everything else is an int
    return tuple(s if _is_symbolic(s) else int(s) for s in shape)


def _is_symbolic(d) -> bool:
    return not isinstance(d, (int, np.integer)) and jax.export.is_symbolic_dim(d)


def _infer_shape(shape, numel, what="view"):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
    return tuple(shape)


# ================================ views ==========================================================
# each view op's ``host`` is its NumPy twin (Op.host): a script's first uses of a shape move
# its elements on the host instead of compiling a kernel each
_view = defop("view", lambda x, shape: jnp.reshape(x, shape), "ViewBackward0", linear=True, view=True,
              host=lambda x, shape: np.reshape(x, shape))
_transpose = defop("transpose", lambda x, d0, d1: jnp.swapaxes(x, d0, d1), "TransposeBackward0",
                   linear=True, view=True, host=lambda x, d0, d1: np.swapaxes(x, d0, d1))
_t = defop("t", lambda x: x.T, "TBackward0", linear=True, view=True, host=lambda x: x.T)
_permute = defop("permute", lambda x, dims: jnp.transpose(x, dims), "PermuteBackward0",
                 linear=True, view=True, host=lambda x, dims: np.transpose(x, dims))
_squeeze0 = defop("squeeze", lambda x, dims: jnp.squeeze(x, dims), "SqueezeBackward0",
                  linear=True, view=True, host=lambda x, dims: np.squeeze(x, dims))
_squeeze1 = defop("squeeze_dim", lambda x, dims: jnp.squeeze(x, dims), "SqueezeBackward1",
                  linear=True, view=True, host=lambda x, dims: np.squeeze(x, dims))
_squeeze2 = defop("squeeze_dims", lambda x, dims: jnp.squeeze(x, dims), "SqueezeBackward2",
                  linear=True, view=True, host=lambda x, dims: np.squeeze(x, dims))
_unsqueeze = defop("unsqueeze", lambda x, dim: jnp.expand_dims(x, dim), "UnsqueezeBackward0",
                   linear=True, view=True, host=lambda x, dim: np.expand_dims(x, dim))
_expand = defop("expand", lambda x, shape: jnp.broadcast_to(x, shape), "ExpandBackward0",
                linear=True, view=True, host=lambda x, shape: np.broadcast_to(x, shape))


@export("view", function=False)
def view(self, *shape) -> Tensor:
    """A view with another shape (one dim may be -1); shares storage with ``self``.

    >>> import funcgrad
    >>> funcgrad.arange(6).view(2, -1)
    tensor([[0, 1, 2],
            [3, 4, 5]])
    """
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, Size)):
        return self.to(shape[0])  # view(dtype): reinterpretation is not supported, cast instead
    shape = _infer_shape(_shape_arg(shape), self.numel())
    if self._viewinfo is not None and not _viewable(self, shape):
        raise RuntimeError(_strides.VIEW_ERROR)
    return apply(_view, self, shape=shape)


def _viewable(t, shape) -> bool:
    """Whether PyTorch can view ``t`` (a view, with its strides) as ``shape`` without a copy."""
    sz, st, _ = t._layout()
    if any(_is_symbolic(d) for d in sz + tuple(shape)):
        return True  # jax.export's symbolic batch dim: no strides to reason about
    return _strides.compute_stride(sz, st, shape) is not None


_unsafe_view = defop("unsafe_view", lambda x, shape: jnp.reshape(x, shape), "UnsafeViewBackward0",
                     linear=True, host=lambda x, shape: np.reshape(x, shape))


@export("reshape")
def reshape(input, *shape) -> Tensor:
    """A view with another shape when PyTorch's strides allow one (``ViewBackward0``), else a
    copy (``CloneBackward0`` then ``UnsafeViewBackward0``), as PyTorch.

    >>> import funcgrad
    >>> x = funcgrad.zeros(2, 3)
    >>> x.reshape(3, 2).is_contiguous(), x.t().reshape(6).is_contiguous()
    (True, True)
    """
    shape = _infer_shape(_shape_arg(shape), input.numel())
    if input._viewinfo is None or _viewable(input, shape):
        return apply(_view, input, shape=shape)
    return apply(_unsafe_view, clone(input), shape=shape)


@export("view_as", function=False)
def view_as(self, other) -> Tensor:
    return view(self, other.shape)


@export("reshape_as", function=False)
def reshape_as(self, other) -> Tensor:
    return reshape(self, other.shape)


@export("transpose", "swapaxes", "swapdims")
def transpose(input, dim0, dim1) -> Tensor:
    n = input.ndim
    return apply(_transpose, input, d0=_wrap_dim(dim0, n), d1=_wrap_dim(dim1, n))


@export("t")
def t(input) -> Tensor:
    """Transpose of a ≤2-D tensor (``TBackward0``)."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return apply(_t, input)


@export("permute")
def permute(input, *dims) -> Tensor:
    dims = _shape_arg(dims)
    n = input.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                           f"match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {n} is not equal to len(dims) = {len(dims)}")
    return apply(_permute, input, dims=tuple(_wrap_dim(d, n) for d in dims))


def _T(self):
    if self.ndim <= 1:
        return self
    return apply(_permute, self, dims=tuple(reversed(range(self.ndim))))


def _mT(self):
    return transpose(self, -2, -1)


Tensor.T = property(_T, doc="All dims reversed (``PermuteBackward0``).")
Tensor.mT = property(_mT, doc="Last two dims swapped.")
Tensor.H = property(lambda self: _T(self).conj() if self.is_complex() else _T(self))
Tensor.mH = property(lambda self: _mT(self))


# (squeeze, unsqueeze, cat, stack: frameless frontends of _parser.SCHEMAS, see _parser.rerun)
@export("squeeze")
def squeeze(input=REQUIRED, dim=None, *args, **numpy) -> Tensor:
    if args or numpy:  # (NumPy's names, more arguments: as PyTorch's parser reads the call)
        return rerun(squeeze)
    try:
        n = input.ndim
        if dim is None:
            return apply(_squeeze0, input, dims=tuple(i for i, s in enumerate(input.shape) if s == 1))
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = tuple(d for d in (_wrap_dim(d, n) for d in dims) if n and input.shape[d] == 1)
        return apply(_squeeze2 if isinstance(dim, (tuple, list)) else _squeeze1, input, dims=dims)
    except TypeError:  # (PyTorch's, where its parser refuses the call)
        refuse(squeeze)
        raise


@export("unsqueeze")
def unsqueeze(input=REQUIRED, dim=REQUIRED, *args, **numpy) -> Tensor:
    if args or numpy:
        return rerun(unsqueeze)
    try:
        return apply(_unsqueeze, input, dim=_wrap_dim(dim, input.ndim + 1))
    except TypeError:
        refuse(unsqueeze)
        raise


@export("expand", function=False)
def expand(self, *sizes) -> Tensor:
    """Broadcast to a larger size without copying (-1 keeps a dim)."""
    sizes = _shape_arg(sizes)
    return apply(_expand, self, shape=_broadcast.expand_size(self.shape, sizes, self.type()))


@export("expand_as", function=False)
def expand_as(self, other) -> Tensor:
    return expand(self, other.shape)


@export("broadcast_to")
def broadcast_to(input, size) -> Tensor:
    return expand(input, size)


@export("flatten")
def flatten(input, start_dim=0, end_dim=-1) -> Tensor:
    n = input.ndim
    if n == 0:
        return reshape(input, 1)
    s, e = _wrap_dim(start_dim, n), _wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shp = tuple(input.shape)
    return reshape(input, shp[:s] + (math.prod(shp[s:e + 1]),) + shp[e + 1:])


@export("unflatten")
def unflatten(input, dim, sizes) -> Tensor:
    d = _wrap_dim(dim, input.ndim)
    shp = tuple(input.shape)
    sizes = _infer_shape(tuple(sizes), shp[d])
    return reshape(input, shp[:d] + sizes + shp[d + 1:])


# ================================ copies ==========================================================
# (XLA folds the + 0: a copy of every bit, -0.0, subnormals and nan payloads included)
_clone = defop("clone", lambda x: x + jnp.zeros((), x.dtype) if x.dtype != jnp.bool_ else jnp.array(x),
               "CloneBackward0", linear=True, host=lambda x: x)
def _to_copy_host(x, dtype):
    """``x.astype(dtype)`` where no rounding, flushing or out-of-range value can make NumPy's cast
    differ from XLA's: from bool; integers into integers (both wrap) or into floats that hold
    them exactly; floats without nan or subnormals into bool, into integers that hold them
    after truncation, or into floats that hold them exactly (a widening, or exact values)."""
    src, dst = x.dtype, np.dtype(dtype)
    if src.kind == "c" or dst.kind == "c":
        raise TypeError("complex: the kernel's")
    if src.kind == "b" or (src.kind in "iu" and dst.kind in "biu"):
        return x.astype(dst)
    if src.kind in "iu":  # into a float
        if x.size and max(-int(x.min()), int(x.max())) > 1 << (jnp.finfo(dst).nmant + 1):
            raise ValueError("an integer the float rounds")
        return x.astype(dst)
    if x.size == 0:
        return x.astype(dst)
    a = np.abs(x.astype(np.float64))  # (every float dtype here is exact in float64)
    if np.isnan(a).any() or has_subnormal(x):
        raise ValueError("nan or subnormal: the kernel's")
    if dst.kind == "b":
        return x.astype(dst)
    if dst.kind in "iu":
        t = np.trunc(x.astype(np.float64))
        info = np.iinfo(dst)
        top = 2.0 ** (info.bits - (info.min < 0))  # (not info.max: as a float it rounds up to this)
        if not (np.isfinite(t).all() and info.min <= t.min() and t.max() < top):
            raise ValueError("out of the integer's range: the kernel's")
        return t.astype(dst)
    y = x.astype(dst)
    finite = np.isfinite(a)
    back = np.abs(y.astype(np.float64))
    if not np.array_equal(back[finite], a[finite]) or np.isinf(back[finite]).any() or has_subnormal(y):
        raise ValueError("a value the cast rounds: the kernel's")
    return y


_to_copy = defop("to_copy", lambda x, dtype: x.astype(dtype), "ToCopyBackward0", linear=True,
                 host=_to_copy_host)
_to_device = defop("to_device", lambda x: x, "ToCopyBackward0", linear=True)


@export("clone")
def clone(input, *, memory_format=None) -> Tensor:
    """A copy with its own storage (``CloneBackward0``)."""
    return apply(_clone, input)


def to_device(x: Tensor, device) -> Tensor:
    """Move to a JAX device; recorded as ``ToCopyBackward0`` (identity gradient). To the meta
    device (``_meta.DEVICE``): the shape and dtype; from it: PyTorch's error, no data."""
    if device is not _meta.DEVICE and _meta.is_meta(x):
        raise NotImplementedError(_meta.COPY_OUT_MSG)
    out = apply(_to_device, x)
    out._cell.value = _meta.of(out._value) if device is _meta.DEVICE else \
        jax.device_put(out._value, device)
    return out


# ---- copy_ / zero_ / fill_ ---------------------------------------------------------------------
# dst is differentiable too (its gradient is zero), so copy_ into a tensor that requires grad
# rebases it onto CopyBackwards even from a source that does not, as PyTorch
_copy = defop("copy", lambda dst, src: jnp.broadcast_to(jnp.asarray(src, dst.dtype), dst.shape),
              "CopyBackwards", linear=True)
_zero = defop("zero", lambda x: jnp.zeros_like(x), "ZeroBackward0", linear=True)
# only fill_ uses these: PyTorch's in-place overloads are FillBackward2 (scalar) / 3 (tensor)
_fill = defop("fill", lambda x, v: jnp.full_like(x, v), "FillBackward2", diff=(0,), linear=True)
_fill_t = defop("fill_tensor", lambda x, v: jnp.broadcast_to(v.astype(x.dtype), x.shape),
                "FillBackward3", linear=True)


def _copy_fn(dst, src, non_blocking=False):
    if isinstance(src, Tensor) and dst.shape != src.shape:  # (ATen: a TensorIterator, dst its output)
        _broadcast.check_inplace(dst.shape, (src.shape,))
    if isinstance(src, Tensor) and not (_grad_mode._state.enabled
                                        and (dst._requires_grad or src._requires_grad)):
        a = _factories.host_copy(src._value, dst._value)  # (no graph records it: no kernel needed)
        if a is not None:
            return Tensor._wrap(a)
    return apply(_copy, dst, src)


inplace_method("copy_", _copy_fn)


def _host_fill(x, v):
    """``zero_``/``fill_`` of a tensor no graph records (a buffer, a parameter under ``no_grad``):
    the same array from a host fill while its shape is new (``_factories.host_full``: a model's
    construction compiles no kernel per parameter shape), else None: the op's kernel runs."""
    if x._requires_grad and _grad_mode._state.enabled:
        return None
    val = x._value
    if _is_tracer(val) or type(val) is _meta.MetaArray:
        return None
    a = _factories.host_full(tuple(val.shape), v, val.dtype)
    return None if a is None else Tensor._wrap(a)


def _zero_fn(x):
    out = _host_fill(x, 0)
    return apply(_zero, x) if out is None else out


def _fill_fn(x, v):
    if isinstance(v, Tensor):
        return apply(_fill_t, x, v)
    out = _host_fill(x, v)
    return apply(_fill, x, v) if out is None else out


inplace_method("zero_", _zero_fn)
inplace_method("fill_", _fill_fn)

# ---- writes through views: the base with the view's elements replaced (node "CopySlices") -----
COPY_SLICES = None  # set below


def _copy_slices(base, new, *, chain):
    return _scatter_fn(chain)(base, new)


COPY_SLICES = defop("copy_slices", _copy_slices, "CopySlices", promote="none")
# the Tensor's to() and in-place commits (funcgrad/_tensor.py) call these
_tensor.register_above(to_device=to_device, _to_copy=_to_copy, expand=expand, COPY_SLICES=COPY_SLICES)

# ================================ cat / stack =====================================================
# FanInOp: linear cost in the number of operands (see _fanin.py); registered like defop does
def _def_fanin(key, fn, grad_name, **kw) -> FanInOp:
    if key in OPS:
        raise ValueError(f"op {key!r} declared twice")
    op = OPS[key] = FanInOp(key, fn, grad_name, promote="binary", linear=True, **kw)
    return op


def _fanin_host(join):
    def host(*xs, dim):
        host_exact(*xs)  # (XLA:CPU's bfloat16 concatenate quiets nan payloads)
        return join(xs, axis=dim)
    return host


_cat = _def_fanin("cat", lambda *xs, dim: jnp.concatenate(xs, axis=dim), "CatBackward0", new_axis=False,
                  host=_fanin_host(np.concatenate))
_stack = _def_fanin("stack", lambda *xs, dim: jnp.stack(xs, axis=dim), "StackBackward0", new_axis=True,
                    merge=_cat, host=_fanin_host(np.stack))


def _cat_out(r, o):  # cat's (and stack's, which is cat's) out= check: the cast check, a TypeError
    if cast_dtype(r, o) is not None:
        return TypeError(f"funcgrad.cat(): input types can't be cast to the desired output type "
                         f"{_tensor._scalar_type_name(o.dtype)}")
    return None


@export("cat", "concat", "concatenate", method=False)
def cat(tensors=REQUIRED, dim=0, *args, out=None, **numpy) -> Tensor:
    """Concatenate along an existing dim (1-D empty tensors are skipped, as in PyTorch)."""
    if args or numpy:
        return rerun(cat)
    try:
        if isinstance(tensors, Tensor):  # (a sequence of Tensors only: PyTorch's parser's TypeError)
            raise TypeError
        ts = list(tensors)
        for i, t in enumerate(ts):
            if t.ndim == 0:
                raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        ts = [t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)] or ts[:1]
        if not ts:
            raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
        ref = ts[0]
        d = _wrap_dim(dim, ref.ndim)
        for i, t in enumerate(ts[1:], 1):
            if t.ndim != ref.ndim:
                raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and "
                                   f"{t.ndim}")
            for k in range(ref.ndim):
                if k != d and t.shape[k] != ref.shape[k]:
                    raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                                       f"size {ref.shape[k]} but got size {t.shape[k]} for tensor number {i} "
                                       f"in the list.")
        return write_out(apply(_cat, *ts, dim=d), out, check=_cat_out)
    except TypeError:
        refuse(cat)
        raise


@export("stack", method=False)
def stack(tensors=REQUIRED, dim=0, *args, out=None, **numpy) -> Tensor:
    """Stack equal-shaped tensors along a new dim."""
    if args or numpy:
        return rerun(stack)
    try:
        if isinstance(tensors, Tensor):
            raise TypeError
        ts = list(tensors)
        if not ts:
            raise RuntimeError("stack expects a non-empty TensorList")
        for i, t in enumerate(ts[1:], 1):
            if t.shape != ts[0].shape:
                raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                                   f"{list(ts[0].shape)} at entry 0 and {list(t.shape)} at entry {i}")
        return write_out(apply(_stack, *ts, dim=_wrap_dim(dim, ts[0].ndim + 1)), out, check=_cat_out)
    except TypeError:
        refuse(stack)
        raise


# ================================ indexing =======================================================
# A basic index (ints, slices, None, Ellipsis) gives a view; tensors/lists/bools give a copy.
# The index is split into a hashable static template and the dynamic index arrays.
# Template items: ints, slice tuples, None, Ellipsis, "T" (the next index array) and "B" (a bool: a
# new unit axis, indexed by the next array, [0] for True, [] for False).
def _getitem(x, *arrays, idx):
    if any(type(i) is int or i is None or i == "B" for i in idx):
        x, idx = _presliced(x, idx)
    return x[_build_index(idx, arrays)]


def _setitem(x, v, *arrays, idx):
    v = jnp.asarray(v, x.dtype) if not hasattr(v, "dtype") or v.dtype != x.dtype else v
    v = v.reshape(_strip_ones(v.shape))
    if any(type(i) is int or i is None or i == "B" for i in idx):
        # (an index through PyTorch's view: scatter into the positions it selects)
        pos = _getitem(jnp.arange(x.size).reshape(x.shape), *arrays, idx=idx)
        return x.ravel().at[pos.ravel()].set(jnp.broadcast_to(v, pos.shape).ravel()).reshape(x.shape)
    return x.at[_build_index(idx, arrays)].set(v)


def _strip_ones(shape):
    """A value's shape without its leading 1s, as PyTorch's setitem views it (slicePrefix1sSize)."""
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return tuple(shape[k:])


def _presliced(x, template):
    """PyTorch's first step (applySlicing): ints select, None and bools insert a unit axis; then
    the tensors index what is left. So an int neither joins nor parts the tensor indices as in
    NumPy, whose ``x[0, :, [0]]`` puts the indexed axis first (PyTorch's: last)."""
    pre = tuple(i if type(i) is int or i is None or i is Ellipsis else None if i == "B" else slice(None)
                for i in template)
    return x[pre], tuple(slice(None) if i is None else i for i in template if type(i) is not int)


def _build_index(template, arrays):
    out, it = [], iter(arrays)
    for item in template:
        if item == "T" or item == "B":
            out.append(next(it))
        elif type(item) is tuple:
            out.append(slice(*item))
        else:
            out.append(item)
    return tuple(out)


# Basic indexing (ints, slices, None, Ellipsis) takes ints and unit-step slice starts as
# *dynamic* scalars: `x[i]` and `x[i:i+64]` in a loop reuse one kernel per shape instead of
# compiling one per index. Template items: ("i",) int, ("d", L) slice of length L from a dynamic
# start, ("s", a, b, c) strided slice, ("f",) full slice, None new axis.
def _basic_index(x, dyn, template):
    it, d = iter(dyn), 0
    for item in template:
        if item is None:
            x = jnp.expand_dims(x, d)
            d += 1
        elif item[0] == "i":
            x = jax.lax.dynamic_index_in_dim(x, next(it), d, keepdims=False)
        elif item[0] == "d":
            x = jax.lax.dynamic_slice_in_dim(x, next(it), item[1], axis=d)
            d += 1
        elif item[0] == "s":
            x = jax.lax.slice_in_dim(x, item[1], item[2], item[3], axis=d)
            d += 1
        else:
            d += 1
    return x


def _basic_get(x, *dyn, idx):
    return _basic_index(x, dyn, idx)


def _basic_get_host(x, *dyn, idx):
    """``_basic_get`` by NumPy's basic indexing (a view), for starts the kernel takes unclamped."""
    it, out, d = iter(dyn), [], 0
    for item in idx:
        if item is None:
            out.append(None)
            continue
        size = x.shape[d]
        if item[0] == "i":
            i = next(it)
            if not 0 <= i < size:
                raise IndexError(i)  # (dynamic_index clamps: the kernel decides)
            out.append(i)
        elif item[0] == "d":
            a = next(it)
            if not 0 <= a <= size - item[1]:
                raise IndexError(a)
            out.append(slice(a, a + item[1]))
        elif item[0] == "s":
            out.append(slice(item[1], item[2], item[3]))
        else:
            out.append(slice(None))
        d += 1
    return x[tuple(out)]


def _basic_set(x, v, *dyn, idx):
    # which flat elements the index selects, then one scatter (exact for every dtype)
    flat = _basic_index(jnp.arange(x.size).reshape(x.shape), dyn, idx)
    v = jnp.asarray(v, x.dtype)
    v = jnp.broadcast_to(v.reshape(_strip_ones(v.shape)), flat.shape)
    return x.ravel().at[flat.ravel()].set(v.ravel()).reshape(x.shape)


def _to_basic(template, shape):
    """Turn a basic template of ints/slice tuples/None/Ellipsis into (static template, dyn ints)."""
    n_dims = sum(1 for t in template if t is not None and t is not Ellipsis)
    out, dyn, d = [], [], 0
    for item in template:
        if item is Ellipsis:
            for _ in range(len(shape) - d - (n_dims - _count_before(template, item))):
                out.append(("f",))
                d += 1
        elif item is None:
            out.append(None)
        elif type(item) is int:
            out.append(("i",))
            dyn.append(item)
            d += 1
        else:
            size = shape[d]
            a, b, c = slice(*item).indices(size)
            n = len(range(a, b, c))
            if c == 1 and n == size:
                out.append(("f",))
            elif c == 1:
                out.append(("d", n))
                dyn.append(a)
            else:
                out.append(("s", a, a + (n - 1) * c + 1 if n else a, c))
            d += 1
    return tuple(out), dyn


def _count_before(template, marker):
    n = 0
    for t in template:
        if t is marker:
            return n
        if t is not None:
            n += 1
    return n


_VIEW_OPS = {n: defop("getitem_" + n, _basic_get, g, view=True, linear=True, diff=(0,), host=_basic_get_host)
             for n, g in [("select", "SelectBackward0"), ("slice", "SliceBackward0"),
                          ("unsqueeze_idx", "UnsqueezeBackward0"), ("alias", "AliasBackward0")]}
_index = defop("index", _getitem, "IndexBackward0", diff=(0,), linear=True)
_setitem_basic = defop("setitem", _basic_set, "CopySlices", diff=(0, 1), promote="none")
_index_put = defop("index_put", _setitem, "IndexPutBackward0", diff=(0, 1), promote="none")
# (an index through PyTorch's view of x, x[0, [1, 2]] = v: the base's node is CopySlices)
_setitem_index = defop("setitem_index", _setitem, "CopySlices", diff=(0, 1), promote="none")


def _parse_index(x, index):
    """→ (template tuple, arrays list, is_basic, view node kind, through_view): ``through_view``
    says PyTorch indexes a view of ``x`` (an int, None, bool or a slice not whole), not ``x`` itself."""
    if not isinstance(index, tuple):
        index = (index,)
    shape = x.shape
    # the dims an index takes (PyTorch's count_specified_dimensions): a mask its own, a bool none
    n_real = sum(i.ndim if isinstance(i, Tensor) and i.dtype.name == "bool" else
                 0 if i is None or i is Ellipsis or isinstance(i, bool) else 1 for i in index)
    if n_real > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    template, arrays, basic, kind, dim, view = [], [], True, "alias", 0, False
    sliced, masks = [], []  # the shape PyTorch indexes (after its ints, slices, None), masks to check there
    for real_dim, item in enumerate(index):
        if item is Ellipsis:
            template.append(Ellipsis)
            sliced += shape[dim:len(shape) - (n_real - dim)]
            dim = len(shape) - (n_real - dim)
            continue
        if item is None:
            template.append(None)
            sliced.append(1)
            kind, view = "unsqueeze_idx", True
            continue
        if isinstance(item, bool) or isinstance(item, Tensor) and not item.ndim and item.dtype.name == "bool":
            # a new unit axis there, indexed by [0] (True) or [] (False): an advanced index
            if isinstance(item, Tensor):
                if _is_tracer(item._value):
                    raise TracedValueError("boolean mask indexing")
                item = bool(item._value)
            template.append("B")
            arrays.append(jnp.zeros(int(item), jnp.int64))
            sliced.append(1)
            basic, view = False, True
            continue
        if isinstance(item, (int, np.integer)):
            size = shape[dim]
            if not -size <= item < size:
                raise IndexError(f"index {int(item)} is out of bounds for dimension {real_dim} with size "
                                 f"{size}")
            template.append(int(item) % size)
            kind, dim, view = "select", dim + 1, True
        elif isinstance(item, slice):
            start, stop, step = (None if v is None else int(v) for v in (item.start, item.stop, item.step))
            if step is not None and step <= 0:
                raise ValueError("step must be greater than zero")
            template.append((start, stop, step))
            if (start, stop, step) != (None, None, None) or kind == "alias":
                kind = "slice"
            whole = slice(start, stop, step).indices(shape[dim])
            view = view or whole != (0, shape[dim], 1)
            sliced.append(len(range(*whole)))
            dim += 1
        else:
            if isinstance(item, (list, tuple, range, np.ndarray)):  # range: x[range(n), target]
                item = np.asarray(item)
                if item.dtype == object:
                    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or "
                                     "byte or bool tensors are valid indices")
                item = Tensor._wrap(jnp.asarray(item))
            if not isinstance(item, Tensor):
                raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                 "or bool tensors are valid indices (got " + type(item).__name__ + ")")
            basic = False
            v = item._value
            if v.dtype == jnp.bool_:
                # a mask selects a data-dependent number of elements: make integer indices now
                if _is_tracer(v):
                    raise TracedValueError("boolean mask indexing")
                masks.append((v.shape, len(sliced)))
                sliced += shape[dim:dim + v.ndim]
                for nz in np.nonzero(np.asarray(v)):
                    template.append("T")
                    arrays.append(jnp.asarray(nz))
                dim += v.ndim
                continue
            if not jnp.issubdtype(v.dtype, jnp.integer):
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            _check_index_bounds(v, shape[dim], template.count("T") + template.count("B"))
            template.append("T")
            arrays.append(v)
            sliced.append(shape[dim])
            dim += 1
    if masks or len(arrays) > 1:
        _check_masks_and_broadcast(masks, sliced + list(shape[dim:]), arrays)
    return tuple(template), arrays, basic, kind, view


def _check_masks_and_broadcast(masks, sliced, arrays) -> None:
    """PyTorch's errors for a mask whose shape is not that of the axes it indexes (in the tensor
    its ints, slices and None left), and for index tensors that do not broadcast together."""
    for mask, at in masks:
        for j, m in enumerate(mask):
            if at + j >= len(sliced) or m != sliced[at + j]:
                raise IndexError(f"The shape of the mask {list(mask)} at index {j} does not match the shape "
                                 f"of the indexed tensor {list(sliced)} at index {at + j}")
    shapes = [tuple(a.shape) for a in arrays]
    if all(s == shapes[0] for s in shapes):
        return
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(s)) for s in shapes)) from None


def _check_index_bounds(v, size, nr) -> None:
    """PyTorch's error for an out-of-range index tensor (XLA would clamp it silently); it counts
    the dimension among the tensor indices only. Traced indices cannot be checked."""
    if _is_tracer(v) or not v.size:
        return
    a = np.asarray(v).ravel()
    bad = np.flatnonzero((a < -size) | (a >= size))
    if bad.size:
        raise IndexError(f"index {a[bad[0]]} is out of bounds for dimension {nr} with size {size}")


def _getitem_fn(self, index) -> Tensor:
    template, arrays, basic, kind, _ = _parse_index(self, index)
    if basic:
        template, dyn = _to_basic(template, self.shape)
        return apply(_VIEW_OPS[kind], self, *dyn, idx=template)
    return apply(_index, self, *arrays, idx=template)


def _setitem_method(self, index, value) -> None:
    # (np.float64 is a float; a jax.Array, which PyTorch never sees, is taken as a Tensor)
    if not isinstance(value, (Tensor, int, float, complex, np.integer, jax.Array)):
        raise TypeError(f"can't assign a {_parser.type_name(value)} to a {self.type()}")
    if index is False:  # PyTorch's setitem does nothing for a lone False (it checks no shape)
        return
    # a lone True is x.unsqueeze(0)'s copy (PyTorch: CopySlices); inside a tuple, an index
    template, arrays, basic, _, view = _parse_index(self, None if index is True else index)
    if view and _grad_mode._state.enabled and self.requires_grad and self.grad_fn is None \
            and self._viewinfo is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if basic:
        template, arrays = _to_basic(template, self.shape)
    op = _setitem_basic if basic else _setitem_index if view else _index_put
    try:
        self._inplace(lambda s: apply(op, s, value, *arrays, idx=template))
    except (ValueError, RuntimeError, TypeError):
        _check_value_shape(self, None if index is True else index, value, basic)
        raise


def _check_value_shape(x, index, value, basic) -> None:
    """PyTorch's error for a value that does not broadcast to what ``x[index]`` selects (its shape's
    leading 1s dropped first): expand's (a basic index: a copy into a view) or index_put's."""
    if not isinstance(value, Tensor):
        return
    with _grad_mode.no_grad():
        want = tuple(_getitem_fn(x, index).shape)
    have = _strip_ones(tuple(value.shape))
    if not basic:
        tail = want[len(want) - len(have):] if len(have) <= len(want) else None
        if tail is None or any(h not in (1, w) for h, w in zip(have, tail, strict=True)):
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(have)} cannot be broadcast to "
                               f"indexing result of shape {list(want)}")
        return
    _broadcast.expand_size(have, want, value.type())


export("__getitem__", function=False)(_getitem_fn)
export("__setitem__", function=False)(_setitem_method)
export("index_put_", function=False)(
    lambda self, indices, values, accumulate=False: _index_put_(self, indices, values, accumulate))


def _index_put_(self, indices, values, accumulate):
    indices = tuple(indices)
    if not accumulate:
        _setitem_method(self, indices, values)
        return self
    # accumulate: every (also repeated) index adds its value, so it is a scatter-add, not x[i] + v
    for i in indices:
        if not isinstance(i, Tensor) or i.dtype._kind not in "ib":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if any(i.dtype.name == "bool" for i in indices):  # a mask: its integer positions (eager only)
        indices = tuple(t for i in indices for t in (i.nonzero(as_tuple=True) if i.dtype.name == "bool"
                                                     else (i,)))
    if not isinstance(values, Tensor):
        values = Tensor._wrap(jnp.asarray(values, self._value.dtype))
    self._check_inplace()
    return self._commit(apply(_index_put_acc, self._snapshot(), values, *indices))


def _index_put_acc_fn(x, v, *idx):
    idx = tuple(jnp.where(i < 0, i + x.shape[k], i) for k, i in enumerate(idx))
    return x.at[idx].add(v.astype(x.dtype))


_index_put_acc = defop("index_put_accumulate", _index_put_acc_fn, "IndexPutBackward0", diff=(0, 1),
                       linear=True)


@export("nonzero")
def nonzero(input, *, as_tuple=False):
    """Indices of non-zero elements (data-dependent shape: eager only)."""
    v = np.asarray(input._concrete("nonzero()"))
    nz = np.nonzero(v) if v.ndim else np.nonzero(v.reshape(1))
    if as_tuple:
        return tuple(Tensor._wrap(jnp.asarray(a, jnp.int64)) for a in nz)
    return Tensor._wrap(jnp.asarray(np.stack(nz, axis=1) if len(nz) else np.zeros((0, 0)), jnp.int64))
