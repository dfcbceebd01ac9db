"""Op table — more shape ops: split/chunk/unbind, narrow/select, repeat/tile, roll/flip/rot90,
movedim, broadcast_tensors/meshgrid, pad, tensor_split and the h/v/d stacks, unfold.

Ops PyTorch returns as views (split, chunk, unbind, narrow, select, unfold…) are declared with
``view=True`` so writes through them reach the base; the others are copies.
"""

from __future__ import annotations

import math
import operator
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .. import _broadcast
from .._tensor import Size, _wrap_dim
from .._dispatch import Op
from ._registry import REQUIRED, Tensor, apply, defop, export, refuse, rerun
from .indexing import index_select
from .shape import _VIEW_OPS, _shape_arg, _to_basic, cat, expand, permute, reshape, unsqueeze


def _slice_fn(x, dim, start, stop):
    return jax.lax.slice_in_dim(x, start, stop, axis=dim)


def _unbind_fn(x, dim, i):
    return jax.lax.index_in_dim(x, i, axis=dim, keepdims=False)


def _split_fn(x, dim, sizes):
    starts = np.cumsum((0,) + sizes)
    return tuple(_slice_fn(x, dim, int(a), int(a) + s) for a, s in zip(starts, sizes))


def _split_host(x, dim, sizes):
    starts = np.cumsum((0,) + sizes)
    return tuple(x[(slice(None),) * dim + (slice(int(a), int(a) + s),)] for a, s in zip(starts, sizes))


# each output of a split is a view of the input: its view step is one slice
_SLICE = Op("split_slice", _slice_fn)


def _split_view(j, skey):
    kw = dict(skey)
    start = sum(kw["sizes"][:j])
    return _SLICE, (("dim", kw["dim"]), ("start", start), ("stop", start + kw["sizes"][j]))


# one node with an output per piece, as PyTorch's SplitBackward0 / SplitWithSizesBackward0
_split = defop("split", _split_fn, "SplitBackward0", linear=True, view=_split_view, host=_split_host)
_split_sizes = defop("split_with_sizes", _split_fn, "SplitWithSizesBackward0", linear=True, view=_split_view,
                     host=_split_host)
_unbind = defop("unbind", _unbind_fn, "UnbindBackward0", linear=True, view=True,
                host=lambda x, dim, i: x[(slice(None),) * dim + (i,)])


def _slice_view(input, dim, start, stop):
    """``input[..., start:stop, ...]`` along ``dim`` as a ``SliceBackward0`` view."""
    tmpl, dyn = _to_basic(((None, None, None),) * dim + ((start, stop, None),), input.shape)
    return apply(_VIEW_OPS["slice"], input, *dyn, idx=tmpl)


# ================================ split / chunk / unbind ======================================
@export("split")
def split(tensor, split_size_or_sections, dim=0) -> tuple:
    """Split into chunks of ``split_size`` (last smaller) or of the given sizes (views).

    >>> import funcgrad
    >>> [t.tolist() for t in funcgrad.arange(5).split(2)]
    [[0, 1], [2, 3], [4]]
    """
    d = _wrap_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                               f"tensor's size at dimension {d}), but got split_sizes={sizes}")
        op = _split_sizes
    else:
        s = int(split_size_or_sections)
        if s < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
        if s == 0:
            if n:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                                   f"size of {n}")
            return (tensor,)
        sizes = [min(s, n - i) for i in range(0, n, s)] or [0]
        op = _split
    return tuple(apply(op, tensor, dim=d, sizes=tuple(sizes)))


@export("split_with_sizes")
def split_with_sizes(input, split_sizes, dim=0) -> tuple:
    return split(input, list(split_sizes), dim)


@export("chunk")
def chunk(input, chunks, dim=0) -> tuple:
    """Split into ``chunks`` pieces of ``ceil(size / chunks)`` (fewer if it divides so)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    return split(input, max(math.ceil(n / chunks), 1) if n else 0, d) if n else \
        tuple(apply(_split, input, dim=d, sizes=(0,) * chunks))


@export("unbind")
def unbind(input, dim=0) -> tuple:
    """The slices along ``dim`` (views, ``UnbindBackward0``)."""
    d = _wrap_dim(dim, input.ndim)
    return tuple(apply(_unbind, input, dim=d, i=i) for i in range(input.shape[d]))


@export("narrow")
def narrow(input, dim, start, length) -> Tensor:
    """The view ``input[..., start:start + length, ...]`` along ``dim`` (``SliceBackward0``)."""
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    start = int(start)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    start %= n if n else 1
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _slice_view(input, d, start, start + int(length))


@export("select")
def select(input, dim, index) -> Tensor:
    """The view ``input[..., index, ...]`` along ``dim`` (``SelectBackward0``)."""
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    index = int(index)
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} "
                         f"at dimension {d}")
    tmpl, dyn = _to_basic(((None, None, None),) * d + (index % n,), input.shape)
    return apply(_VIEW_OPS["select"], input, *dyn, idx=tmpl)


def _split_points(n, indices_or_sections):
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = (indices_or_sections.item() if indices_or_sections.ndim == 0
                               else indices_or_sections.tolist())
    if isinstance(indices_or_sections, (list, tuple)):
        pts = [0] + [min(max(int(i) if i >= 0 else n + int(i), 0), n) for i in indices_or_sections] + [n]
        return [(pts[k], max(pts[k], pts[k + 1])) for k in range(len(pts) - 1)]
    s = int(indices_or_sections)
    if s <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {s}")
    q, r = divmod(n, s)
    out, start = [], 0
    for k in range(s):
        size = q + (1 if k < r else 0)
        out.append((start, start + size))
        start += size
    return out


@export("tensor_split")
def tensor_split(input, indices_or_sections, dim=0) -> tuple:
    """Split into ``n`` near-equal parts, or at the given indices (views, ``SliceBackward0``)."""
    d = _wrap_dim(dim, input.ndim)
    return tuple(_slice_view(input, d, a, b) for a, b in _split_points(input.shape[d], indices_or_sections))


def _xsplit(name, dim, min_dim):
    def f(input, indices_or_sections) -> tuple:
        if input.ndim < min_dim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, but "
                               f"got a tensor with {input.ndim} dimensions!")
        d = 0 if (name == "hsplit" and input.ndim == 1) else dim
        if isinstance(indices_or_sections, int) and input.shape[d] % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of "
                               f"the dimension {input.shape[d]} is not divisible by the split_size "
                               f"{indices_or_sections}!")
        return tensor_split(input, indices_or_sections, d)
    f.__name__ = name
    f.__doc__ = f"``tensor_split`` along dim {dim} (PyTorch's ``{name}``)."
    return f


hsplit = export("hsplit")(_xsplit("hsplit", 1, 1))
vsplit = export("vsplit")(_xsplit("vsplit", 0, 2))
dsplit = export("dsplit")(_xsplit("dsplit", 2, 3))


# ================================ repeat / tile / repeat_interleave ===========================
def _repeat_fn(x, reps):
    x = x.reshape((1,) * (len(reps) - x.ndim) + x.shape)
    return jnp.tile(x, reps)


_repeat = defop("repeat", _repeat_fn, "RepeatBackward0", linear=True)
_repeat_interleave = defop("repeat_interleave", lambda x, r, dim: jnp.repeat(x, r, axis=dim),
                           "ViewBackward0", linear=True)


@export("repeat", function=False)
def repeat(self, *sizes) -> Tensor:
    """Tile ``self`` ``sizes[i]`` times along each dim (``RepeatBackward0``)."""
    reps = _shape_arg(sizes)
    if len(reps) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    return apply(_repeat, self, reps=reps)


@export("tile")
def tile(input, dims) -> Tensor:
    """Like ``repeat``, with ``dims`` padded with leading 1s to ``input.ndim``."""
    reps = _shape_arg((dims,) if isinstance(dims, int) else tuple(dims))
    reps = (1,) * (input.ndim - len(reps)) + reps
    return apply(_repeat, input, reps=reps)


@export("repeat_interleave")
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Repeat each element ``repeats`` times (an int or a tensor per element) along ``dim``.

    >>> import funcgrad
    >>> funcgrad.tensor([1, 2]).repeat_interleave(2)
    tensor([1, 1, 2, 2])
    """
    if repeats is None:  # repeat_interleave(repeats): indices repeated by the counts
        reps = np.asarray(input._concrete("repeat_interleave()"))
        return Tensor._wrap(jnp.asarray(np.repeat(np.arange(reps.size), reps), jnp.int64))
    if dim is None:
        input, d = reshape(input, -1), 0
    else:
        d = _wrap_dim(dim, input.ndim)
    if isinstance(repeats, Tensor) and repeats.numel() != 1:
        r = np.asarray(repeats._concrete("repeat_interleave()"))
        if r.ndim != 1 or r.shape[0] != input.shape[d]:
            raise RuntimeError("repeats must have the same size as input along dim")
        if (r < 0).any():
            raise RuntimeError("repeats can not be negative")
        return index_select(input, d, Tensor._wrap(jnp.asarray(np.repeat(np.arange(r.size), r))))
    r = int(repeats)
    if r < 0:
        raise RuntimeError("repeats can not be negative")
    return apply(_repeat_interleave, input, r=r, dim=d)


# ================================ roll / flip / rot90 / movedim ==============================
_roll = defop("roll", lambda x, shifts, dims: jnp.roll(x, shifts, dims) if dims is not None
              else jnp.roll(x.ravel(), shifts).reshape(x.shape), "RollBackward0", linear=True)
_flip = defop("flip", lambda x, dims: jnp.flip(x, dims), "FlipBackward0", linear=True)
_rot90 = defop("rot90", lambda x, k, dims: jnp.rot90(x, k, dims), "Rot90Backward0", linear=True)


@export("roll")
def roll(input, shifts, dims=None) -> Tensor:
    """Shift elements cyclically along ``dims`` (the flattened tensor when ``dims`` is None)."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return apply(_roll, input, shifts=shifts[0], dims=None)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    return apply(_roll, input, shifts=shifts, dims=tuple(_wrap_dim(d, input.ndim) for d in dims))


@export("flip")
def flip(input=REQUIRED, dims=REQUIRED, *args, **numpy) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, ``FlipBackward0``). (Frameless: see
    ``_parser.rerun``; ``dims`` is PyTorch's ``int[]``, which its method also takes as ints.)"""
    if args or numpy:  # (x.flip(0, 1), NumPy's names: as PyTorch's parser reads the call)
        return rerun(flip)
    if type(dims) is int and sys._getframe().f_code.co_qualname == "Tensor.flip":
        dims = (dims,)  # (x.flip(0): the method's one int, without reading the call back)
    elif type(dims) is not tuple and type(dims) is not list or not all(type(d) is int for d in dims):
        # one int (the method's: the function refuses it), a float, a bool, an int list's other
        # elements...: PyTorch's parser decides, its TypeError where it refuses
        refuse(flip)
        dims = tuple(operator.index(d) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
    wrapped = tuple(_wrap_dim(d, input.ndim) for d in dims)
    for i, d in enumerate(wrapped):
        if d in wrapped[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return apply(_flip, input, dims=wrapped)


@export("fliplr")
def fliplr(input) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@export("flipud")
def flipud(input) -> Tensor:
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


@export("rot90")
def rot90(input, k=1, dims=(0, 1)) -> Tensor:
    """Rotate by 90° ``k`` times in the plane ``dims`` (from the first towards the second)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d = tuple(_wrap_dim(x, input.ndim) for x in dims)
    if d[0] == d[1]:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d[0]} and dim1 = {d[1]}")
    return apply(_rot90, input, k=int(k) % 4, dims=d)


@export("movedim", "moveaxis")
def movedim(input=REQUIRED, source=REQUIRED, destination=REQUIRED, *args, **numpy) -> Tensor:
    """Move dims ``source`` to positions ``destination`` (a permute view)."""
    if args or numpy:  # (more arguments, a keyword not PyTorch's: as its parser reads it, _parser.rerun)
        return rerun(movedim)
    try:
        n = input.ndim
        src = (source,) if isinstance(source, int) else tuple(source)
        dst = (destination,) if isinstance(destination, int) else tuple(destination)
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) "
                               f"should contain the same number of dims as destination ({list(dst)} dims)")
        src = tuple(_wrap_dim(s, n) for s in src)
        dst = tuple(_wrap_dim(s, n) for s in dst)
        order = [i for i in range(n) if i not in src]
        perm = [None] * n
        for s, d in zip(src, dst):
            perm[d] = s
        it = iter(order)
        return permute(input, tuple(p if p is not None else next(it) for p in perm))
    except TypeError:  # (PyTorch's, where its parser refuses the call)
        refuse(movedim)
        raise


# ================================ broadcasting ================================================
def broadcast_shapes(*shapes) -> Size:
    """The broadcast shape of ``shapes`` (an int is a 1-d shape), with ``torch.broadcast_shapes``'s
    errors (its Python ``torch._refs._broadcast_shapes``, not ATen's ``infer_size``).

    >>> import funcgrad
    >>> funcgrad.broadcast_shapes((2,), (3, 1), (1, 1, 1))
    funcgrad.Size([1, 3, 2])
    """
    common = _broadcast.broadcast_shapes(*shapes)
    return Size(() if common is None else common)


@export("broadcast_tensors", method=False)
def broadcast_tensors(*tensors) -> tuple:
    """Expand all tensors to their common shape (tensors already of that shape are returned as is)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = _broadcast.infer_size_all([t.shape for t in tensors])  # (ATen's expand_outplace)
    return tuple(t if tuple(t.shape) == shape else expand(t, shape) for t in tensors)


@export("meshgrid", method=False)
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids from 1-D tensors; ``indexing='ij'`` (default, with PyTorch's warning) or ``'xy'``.

    >>> import funcgrad
    >>> gx, gy = funcgrad.meshgrid(funcgrad.tensor([1, 2]), funcgrad.tensor([3, 4, 5]), indexing="ij")
    >>> gx.shape
    funcgrad.Size([2, 3])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    ts = [reshape(t, -1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    n = len(ts)
    out = [expand(reshape(t, tuple(-1 if k == i else 1 for k in range(n))), shape) for i, t in enumerate(ts)]
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


# ================================ atleast / stacks ===========================================
def _atleast(n):
    def f(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(f(t) for t in tensors[0])
        if len(tensors) > 1:
            return tuple(f(t) for t in tensors)
        t = tensors[0]
        if t.ndim >= n:
            return t
        if t.ndim == 0:
            return reshape(t, (1,) * n)
        if n == 2:
            return unsqueeze(t, 0)
        return unsqueeze(unsqueeze(t, 0), -1) if t.ndim == 1 else unsqueeze(t, -1)
    f.__name__ = f"atleast_{n}d"
    f.__doc__ = f"The input viewed with at least {n} dims (tuples of tensors map elementwise)."
    return f


atleast_1d = export("atleast_1d", method=False)(_atleast(1))
atleast_2d = export("atleast_2d", method=False)(_atleast(2))
atleast_3d = export("atleast_3d", method=False)(_atleast(3))


def _sequence(tensors) -> None:
    """A Tensor where PyTorch takes a sequence of them: a TypeError, which the parser's wrapper
    (``_parser.SCHEMAS``) words as PyTorch (``hstack(): argument 'tensors' (position 1) must be
    tuple of Tensors, not Tensor``)."""
    if isinstance(tensors, Tensor):
        raise TypeError


@export("hstack", method=False)
def hstack(tensors, *, out=None) -> Tensor:
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    _sequence(tensors)
    ts = [atleast_1d(t) for t in tensors]
    return cat(ts, 0 if ts and ts[0].ndim == 1 else 1, out=out)


@export("vstack", "row_stack", method=False)
def vstack(tensors, *, out=None) -> Tensor:
    """Concatenate along dim 0 after making every tensor at least 2-D."""
    _sequence(tensors)
    return cat([atleast_2d(t) for t in tensors], 0, out=out)


@export("dstack", method=False)
def dstack(tensors, *, out=None) -> Tensor:
    """Concatenate along dim 2 after making every tensor at least 3-D."""
    _sequence(tensors)
    return cat([atleast_3d(t) for t in tensors], 2, out=out)


@export("column_stack", method=False)
def column_stack(tensors, *, out=None) -> Tensor:
    """Stack 0-D/1-D tensors as columns (2-D tensors are concatenated along dim 1)."""
    _sequence(tensors)
    ts = [reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors]
    return cat(ts, 1, out=out)


# ================================ unfold (sliding windows) ===================================
def _unfold_fn(x, dim, size, step):
    if x.ndim == 0:
        return jnp.broadcast_to(x, (size,))
    n = (x.shape[dim] - size) // step + 1
    idx = jnp.arange(n)[:, None] * step + jnp.arange(size)[None, :]
    return jnp.moveaxis(jnp.take(x, idx, axis=dim), dim + 1, -1)


_unfold = defop("unfold", _unfold_fn, "UnfoldBackward0", linear=True, view=True)


@export("unfold", function=False)
def unfold(self, dimension, size, step) -> Tensor:
    """Sliding windows of ``size`` with stride ``step`` along ``dimension``, as a new last dim (a view).

    >>> import funcgrad
    >>> funcgrad.arange(5).unfold(0, 2, 2)
    tensor([[0, 1],
            [2, 3]])
    """
    d = _wrap_dim(dimension, self.ndim)
    n = self.shape[d] if self.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return apply(_unfold, self, dim=d, size=int(size), step=int(step))


# ================================ pad (nn.functional.pad) =====================================
def _pad_fn(x, *, widths, mode, value):
    if mode == "constant":
        # lax.pad takes negative widths too (cropping), as PyTorch's constant pad does
        return jax.lax.pad(x, jnp.asarray(value, x.dtype), [(lo, hi, 0) for lo, hi in widths])
    return jnp.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])


# (constant padding is affine in x: its backward needs x's shape only, so its node saves no tensor
# and a second backward through it runs, as PyTorch's ConstantPadNdBackward0, which saves the pad)
_PADS = {"constant": defop("pad_constant", _pad_fn, "ConstantPadNdBackward0", diff=(0,), linear=True),
         "circular": defop("pad_circular", _pad_fn, "CopySlices")}
for _n in (1, 2, 3):
    _PADS[f"reflect{_n}"] = defop(f"pad_reflect{_n}d", _pad_fn, f"ReflectionPad{_n}DBackward0")
    _PADS[f"replicate{_n}"] = defop(f"pad_replicate{_n}d", _pad_fn, f"ReplicationPad{_n}DBackward0")


@export("pad", method=False, function=False)
def pad(input, pad, mode: str = "constant", value=None) -> Tensor:
    """``nn.functional.pad``: ``pad = (left_last, right_last, left_2nd_last, …)``; modes
    ``'constant'`` (negative widths crop), ``'reflect'``, ``'replicate'``, ``'circular'``.

    >>> import funcgrad
    >>> from funcgrad._ops.shape_more import pad
    >>> pad(funcgrad.tensor([[1., 2.]]), (1, 1), value=0.5)
    tensor([[0.5000, 1.0000, 2.0000, 0.5000]])
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension "
                           f"but got padding length {len(pad)} and input of dimension {input.ndim}")
    widths = [(0, 0)] * input.ndim
    for i in range(k):
        widths[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        return apply(_PADS["constant"], input, widths=tuple(widths), mode=mode,
                     value=0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if k > 3 or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.ndim}D input "
                                  "tensor.\n"
                                  "Supported combinations for non-constant padding:\n"
                                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for i, (lo, hi) in enumerate(widths):
        n = input.shape[i]
        if (lo, hi) == (0, 0):
            continue
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({lo}, {hi}) at dimension {i} of input "
                               f"{list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if min(lo, hi) < 0:
            raise NotImplementedError("negative padding is supported only with mode='constant'")
    key = "circular" if mode == "circular" else f"{mode}{k}"
    return apply(_PADS[key], input, widths=tuple(widths), mode=mode, value=0)
