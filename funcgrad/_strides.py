"""PyTorch's strides for funcgrad's views, computed lazily from a view's chain of ops.

funcgrad's arrays are XLA arrays (no strides of their own); a view keeps the chain of view ops
from its base (``_tensor._View``). ``stride()``, ``storage_offset()``, ``is_contiguous()`` and
the ``view`` / ``reshape`` decision follow PyTorch by replaying that chain on (sizes, strides,
offset) with each op's stride rule below, starting from the base's contiguous strides — only when
asked for, and cached on the view, so the eager hot path computes nothing. Results of non-view
ops are contiguous (PyTorch may give some of them its input's layout; README "What differs").
"""

from __future__ import annotations

VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")


def contiguous_strides(shape) -> tuple:
    """Row-major strides, as PyTorch gives a new tensor (a size-0/1 dim still gets a stride)."""
    strides, acc = [], 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(strides))


def is_contiguous(shape, strides) -> bool:
    """PyTorch's ``is_contiguous``: size-1 dims are ignored, empty tensors are contiguous."""
    if any(s == 0 for s in shape):
        return True
    expected = 1
    for size, st in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if size == 1:
            continue
        if st != expected:
            return False
        expected *= size
    return True


def compute_stride(oldshape, oldstride, newshape):
    """Strides that view ``oldshape``/``oldstride`` as ``newshape`` without a copy, else None
    (PyTorch's ``computeStride``, aten/src/ATen/TensorUtils.cpp)."""
    oldshape, oldstride, newshape = tuple(oldshape), tuple(oldstride), tuple(newshape)
    if not oldshape:
        return (1,) * len(newshape)
    numel = 1
    for s in oldshape:
        numel *= s
    if numel == 0 and oldshape == newshape:
        return oldstride
    newstride = [0] * len(newshape)
    if numel == 0:
        for d in range(len(newshape) - 1, -1, -1):
            newstride[d] = 1 if d == len(newshape) - 1 else max(newshape[d + 1], 1) * newstride[d + 1]
        return tuple(newstride)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        # at the end of a chunk of dims that are contiguous with each other, match the view dims
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1
                             and oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


# ---- one rule per view op: (sizes, strides, offset, static kwargs, dynamic ints) -> the same
def _view(sz, st, off, kw, dyn):
    new = compute_stride(sz, st, kw["shape"])
    if new is None:
        raise RuntimeError(VIEW_ERROR)
    return tuple(kw["shape"]), new, off


def _permuted(sz, st, off, dims):
    return tuple(sz[d] for d in dims), tuple(st[d] for d in dims), off


def _transpose(sz, st, off, kw, dyn):
    dims = list(range(len(sz)))
    dims[kw["d0"]], dims[kw["d1"]] = dims[kw["d1"]], dims[kw["d0"]]
    return _permuted(sz, st, off, dims)


def _t(sz, st, off, kw, dyn):
    return _permuted(sz, st, off, tuple(reversed(range(len(sz)))))


def _squeeze(sz, st, off, kw, dyn):
    drop = set(kw["dims"]) if not isinstance(kw["dims"], int) else {kw["dims"]}
    keep = [i for i in range(len(sz)) if i not in drop]
    return tuple(sz[i] for i in keep), tuple(st[i] for i in keep), off


def _unsqueezed(sz, st, d):
    new_st = 1 if d >= len(sz) else sz[d] * st[d]
    return sz[:d] + (1,) + sz[d:], st[:d] + (new_st,) + st[d:]


def _unsqueeze(sz, st, off, kw, dyn):
    return (*_unsqueezed(sz, st, kw["dim"]), off)


def _expand(sz, st, off, kw, dyn):
    shape = tuple(kw["shape"])
    lead = len(shape) - len(sz)
    new_st = [0] * lead
    for i, (have, s) in enumerate(zip(sz, st)):
        new_st.append(0 if have == 1 and shape[lead + i] != 1 else s)
    return shape, tuple(new_st), off


def _basic_index(sz, st, off, kw, dyn):
    """The basic-index template of ``_ops.shape._basic_index`` (ints, slices, None)."""
    sz, st, it, d = tuple(sz), tuple(st), iter(dyn), 0
    for item in kw["idx"]:
        if item is None:
            sz, st = _unsqueezed(sz, st, d)
            d += 1
        elif item[0] == "i":
            off += _int(next(it)) * st[d]
            sz, st = sz[:d] + sz[d + 1:], st[:d] + st[d + 1:]
        elif item[0] == "d":
            off += _int(next(it)) * st[d]
            sz = sz[:d] + (item[1],) + sz[d + 1:]
            d += 1
        elif item[0] == "s":
            a, b, c = item[1:]
            off += a * st[d]
            sz = sz[:d] + (len(range(a, b, c)),) + sz[d + 1:]
            st = st[:d] + (st[d] * c,) + st[d + 1:]
            d += 1
        else:
            d += 1
    return sz, st, off


def _slice(sz, st, off, kw, dyn):
    d, a, b = kw["dim"], kw["start"], kw["stop"]
    return sz[:d] + (b - a,) + sz[d + 1:], st, off + a * st[d]


def _select(sz, st, off, kw, dyn):
    d = kw["dim"]
    return sz[:d] + sz[d + 1:], st[:d] + st[d + 1:], off + kw["i"] * st[d]


def _unfold(sz, st, off, kw, dyn):
    if not sz:
        return (kw["size"],), (1,), off
    d, size, step = kw["dim"], kw["size"], kw["step"]
    n = (sz[d] - size) // step + 1
    return (sz[:d] + (n,) + sz[d + 1:] + (size,), st[:d] + (st[d] * step,) + st[d + 1:] + (st[d],), off)


def _diagonal(sz, st, off, kw, dyn):
    k, d1, d2 = kw["offset"], kw["d1"], kw["d2"]
    n = max(min(sz[d1] + min(k, 0), sz[d2] - max(k, 0)), 0)
    if n:
        off += k * st[d2] if k >= 0 else -k * st[d1]
    keep = [i for i in range(len(sz)) if i not in (d1, d2)]
    return (tuple(sz[i] for i in keep) + (n,), tuple(st[i] for i in keep) + (st[d1] + st[d2],), off)


def _alias(sz, st, off, kw, dyn):
    return sz, st, off


def _as_strided(sz, st, off, kw, dyn):
    """Absolute: an ``as_strided`` step reads the storage (it starts its view's chain)."""
    return tuple(kw["size"]), tuple(kw["stride"]), kw["storage_offset"]


def _int(v) -> int:
    try:
        return int(v)
    except TypeError:  # a traced index under jit: the offset is not known, strides still are
        return 0


RULES = {  # op key in the op table -> stride rule (tests/test_strides.py: every view op has one)
    "view": _view, "transpose": _transpose, "t": _t, "permute": lambda sz, st, off, kw, dyn:
    _permuted(sz, st, off, kw["dims"]), "squeeze": _squeeze, "squeeze_dim": _squeeze,
    "squeeze_dims": _squeeze, "unsqueeze": _unsqueeze, "expand": _expand,
    "getitem_select": _basic_index, "getitem_slice": _basic_index,
    "getitem_unsqueeze_idx": _basic_index, "getitem_alias": _basic_index, "split": _slice,
    "split_with_sizes": _slice, "unbind": _select, "unfold": _unfold, "diagonal": _diagonal,
    "split_slice": _slice,
    "alias": _alias, "as_strided": _as_strided,
    # the in-place forms' steps (funcgrad/_ops/inplace_shape.py)
    "t_inplace": _t, "transpose_inplace": _transpose, "squeeze_inplace": _squeeze,
    "squeeze_dim_inplace": _squeeze, "squeeze_dims_inplace": _squeeze, "unsqueeze_inplace": _unsqueeze,
}


def of_chain(base_shape, chain):
    """(sizes, strides, storage offset) of the view ``chain`` applied to a contiguous base."""
    sz = tuple(base_shape)
    st, off = contiguous_strides(sz), 0
    for op, skey, dyn in chain:
        sz, st, off = RULES[op.name](sz, st, off, dict(skey), dyn)
    return sz, st, off


# ---- layouts and memory formats (``funcgrad.strided``, ``funcgrad.channels_last``…) -----------
class _Named:
    """A constant of the ``funcgrad`` namespace known by its name there (``funcgrad.strided``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"funcgrad.{self.name}"

    def __reduce__(self):  # (pickle and deepcopy give the same object back)
        return self.name


class layout(_Named):  # noqa: N801  (PyTorch's type name: torch.layout)
    """A tensor layout; funcgrad has one, ``funcgrad.strided`` (every ``Tensor.layout``)."""

    __slots__ = ()
    __module__ = "funcgrad"


class memory_format(_Named):  # noqa: N801  (torch.memory_format)
    """A memory format: ``contiguous_format``, ``channels_last``, ``channels_last_3d`` or
    ``preserve_format``. funcgrad accepts each where PyTorch does (``contiguous``, ``to``,
    ``*_like``, ``is_contiguous``) with PyTorch's checks, but a result of a non-view op is always
    row-major here (README "What differs"): ``is_contiguous(memory_format=channels_last)`` answers
    for that layout, by PyTorch's rule."""

    __slots__ = ()
    __module__ = "funcgrad"


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# the dims PyTorch walks from the fastest-varying for a channels-last layout (c10's
# compute_channels_last_contiguous_2d / _3d), by the format's required rank
_CHANNELS_LAST = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def check_memory_format(fmt, where: str, ndim: int | None = None) -> None:
    """PyTorch's argument check of ``memory_format=`` (a ``memory_format`` or None) and, given
    the tensor's rank, the channels-last formats' rank requirement."""
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{where}(): argument 'memory_format' must be funcgrad.memory_format, not "
                        f"{type(fmt).__name__}")
    if ndim is not None and fmt in _CHANNELS_LAST and ndim != _CHANNELS_LAST[fmt][0]:
        raise RuntimeError(f"required rank {_CHANNELS_LAST[fmt][0]} tensor to use {fmt.name} format")


def is_contiguous_as(shape, strides, fmt) -> bool:
    """PyTorch's ``is_contiguous(memory_format=fmt)`` for these sizes and strides: row-major
    contiguity for ``contiguous_format``/``preserve_format``; for a channels-last format, the rank
    it needs and strides growing over (C, W, H, N) / (C, W, H, D, N), size-1 dims skipped."""
    if fmt not in _CHANNELS_LAST:
        return is_contiguous(shape, strides)
    rank, order = _CHANNELS_LAST[fmt]
    if len(shape) != rank:
        return False
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


_TO_OVERLOADS = (
    " * (funcgrad.device device = None, funcgrad.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, funcgrad.memory_format memory_format = None)\n"
    " * (funcgrad.dtype dtype, bool non_blocking = False, bool copy = False, *, funcgrad.memory_format "
    "memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, funcgrad.memory_format "
    "memory_format = None)\n")


def to_arguments_error(args, kwargs) -> TypeError:
    """PyTorch's argument parser refusing a ``to()`` call (as for ``memory_format="..."``)."""
    def name(v):
        t = type(v)
        if t.__module__.startswith("funcgrad") and t.__name__ in ("dtype", "device", "memory_format"):
            return f"funcgrad.{t.__name__}"
        return t.__name__
    pos, kw = [name(a) for a in args], [f"{k}={name(v)}" for k, v in kwargs.items()]
    got = ", ".join(pos + kw) if pos else ", ".join(kw) + ", "  # (its spelling, trailing comma and all)
    return TypeError(f"to() received an invalid combination of arguments - got ({got}), but expected one "
                     f"of:\n" + _TO_OVERLOADS)
