"""Op table — ``as_strided``: a view reading the storage elements at ``offset + Σ i_k·stride_k``
(``funcgrad.as_strided``, ``Tensor.as_strided``, ``as_strided_``, ``as_strided_scatter``).

funcgrad's storage is the root tensor's array (a view keeps a chain of view ops from its root,
``_tensor._View``), so an ``as_strided`` view is one gather from the root's flattened array: its
view chain starts again at the root whatever view it was taken of (its sizes, strides and offset
are absolute, as PyTorch's), and writes through it reach the root by the view machinery's scatter.

Autograd is PyTorch's ``as_strided_backward`` (tools/autograd/FunctionsManual.cpp): the gradient
is added into a storage-shaped buffer at the positions the result reads (overlapping strides
accumulate) and read back at the positions the input covers; where the input itself overlaps
(an expanded input), each position's sum is divided by how many input elements read it; storage
the input does not cover gets no gradient. From the root (contiguous, no overlap) that is
``jax.vjp`` of the gather (``as_strided``); from any other view, ``as_strided_view`` states it as
its derivative slot, the storage a non-differentiable operand.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from .. import _storage, _tensor
from .._tensor import _View
from . import _parser
from ._registry import Tensor, apply, defop, export


def _positions(size, stride, offset):
    """The storage position each element reads, of shape ``size`` (int32/int64 as jnp chooses)."""
    idx = jnp.asarray(offset)
    for k, (n, s) in enumerate(zip(size, stride, strict=True)):
        shape = [1] * len(size)
        shape[k] = n
        idx = idx + (jnp.arange(n) * s).reshape(shape)
    return jnp.broadcast_to(idx, tuple(size))


def _gather(x, size, stride, storage_offset):
    """``x`` read as a contiguous storage (the root's array)."""
    return x.reshape(-1)[_positions(size, stride, storage_offset)]


def _count(size, stride, offset, n):
    """How many elements of the geometry read each of ``n`` storage positions (NumPy, static)."""
    idx = (
        offset
        + sum(
            np.arange(k).reshape([-1 if d == j else 1 for d in range(len(size))]) * s
            for j, (k, s) in enumerate(zip(size, stride, strict=True))
        )
        if size
        else np.asarray(offset)
    )
    return np.bincount(np.broadcast_to(idx, tuple(size)).ravel(), minlength=n)[:n]


def _gather_view(x, storage, size, stride, storage_offset, in_geometry):
    """The result read from ``storage`` (the root's array, holding ``x`` at ``in_geometry``)."""
    return _gather(storage, size, stride, storage_offset)


def _gather_view_jvp(primals, tangents, out, size, stride, storage_offset, in_geometry):
    # as_strided_backward transposed: x's tangent placed in storage, averaged where the input
    # overlaps, zero where it does not reach; read at the result's positions
    x, storage = primals
    n = storage.size
    count = _count(*in_geometry, n)
    buf = (
        jnp.zeros(n, tangents[0].dtype).at[_positions(*in_geometry).reshape(-1)].add(tangents[0].reshape(-1))
    )
    if count.max(initial=0) > 1:
        buf = jnp.where(count > 0, buf / jnp.asarray(np.maximum(count, 1), buf.dtype), 0)
    return buf[_positions(size, stride, storage_offset)]


def _scatter_positions(x, size, stride, storage_offset, base):
    """The result's positions ``src`` goes to: storage positions less ``input``'s own offset, as
    PyTorch's clone reads them; any outside the result (before or after it) are dropped."""
    idx = _positions(size, stride, storage_offset).reshape(-1) - base
    return jnp.where(idx < 0, x.size, idx)


def _scatter_fn(x, src, size, stride, storage_offset, base):
    idx = _scatter_positions(x, size, stride, storage_offset, base)
    return x.reshape(-1).at[idx].set(src.reshape(-1), mode="drop").reshape(x.shape)


def _scatter_jvp(primals, tangents, out, size, stride, storage_offset, base):
    # PyTorch's as_strided_scatter_backward (FunctionsManual.cpp) gives ``input`` the gradient *at*
    # the scattered positions (zero elsewhere), not around them, and ``src`` the gradient there:
    # this is the tangent whose transpose is that backward
    x_t, s_t = tangents
    idx = _scatter_positions(x_t, size, stride, storage_offset, base)
    flat = (
        jnp.zeros(x_t.size, out.dtype)
        .at[idx]
        .set(
            x_t.reshape(-1).at[idx].get(mode="fill", fill_value=0) + s_t.reshape(-1),
            unique_indices=True,
            mode="drop",
        )
    )
    return flat.reshape(x_t.shape)


_as_strided = defop("as_strided", _gather, "AsStridedBackward0", view=True, linear=True)
_as_strided_view = defop(
    "as_strided_view", _gather_view, "AsStridedBackward0", diff=(0,), linear=True, jvp=_gather_view_jvp
)
_as_strided_inplace = defop(
    "as_strided_inplace", _gather_view, "AsStridedBackward1", diff=(0,), linear=True, jvp=_gather_view_jvp
)
_as_strided_scatter = defop(
    "as_strided_scatter", _scatter_fn, "AsStridedScatterBackward0", linear=True, jvp=_scatter_jvp
)

_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)


def check_geometry(size, stride, offset, itemsize: int, storage_numel: int) -> None:
    """PyTorch's ``setStrided`` checks, in its order (aten/src/ATen/native/TensorShape.cpp)."""
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}"
        )
    if any(n == 0 for n in size):
        nbytes = 0
    elif any(n < 0 for n in size):
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}"
        )
    else:
        nbytes = itemsize * (1 + sum((n - 1) * s for n, s in zip(size, stride, strict=True)))
    if nbytes and nbytes + offset * itemsize > storage_numel * itemsize:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {itemsize} requiring a storage size of {nbytes + offset * itemsize} "
            f"are out of bounds for storage of size {storage_numel * itemsize}"
        )
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")


def overlaps(size, stride) -> bool:
    """PyTorch's ``_maybe_overlapping_memory`` over the dims of size > 1."""
    dims = sorted((s, n) for n, s in zip(size, stride, strict=True) if n > 1)
    reach = 0
    for s, n in dims:
        if s <= reach:
            return True
        reach += s * (n - 1)
    return False


def _root(input: Tensor) -> Tensor:
    vi = input._viewinfo
    return input if vi is None else vi.base


def _geometry(input: Tensor, size, stride, storage_offset, root: Tensor) -> dict:
    """The static arguments of a call, checked as PyTorch checks them."""
    size, stride = _ints(size), _ints(stride)
    offset = input.storage_offset() if storage_offset is None else int(storage_offset)
    check_geometry(size, stride, offset, input.dtype.itemsize, root.numel())
    return {"size": size, "stride": stride, "storage_offset": offset}


def _as_view_of(out: Tensor, root: Tensor, static: dict, owner) -> Tensor:
    """``out`` (computed from a view, its node recorded) made a view of ``root``'s storage
    (``owner``: PyTorch's base where it is not ``root``, see ``_tensor._View``)."""
    value = out._value
    out._cell, out._ver = root._cell, root._ver
    out._viewinfo = _View(root, ((_as_strided, tuple(static.items()), ()),), value, root._cell.gen, owner)
    return out


def _parsed(name: str):
    """Method ``name`` raising PyTorch's argument error (``_parser.method_error``) for a call its
    binding refuses, in place of the failure (the in-place geometry methods read their arguments
    before they write anything)."""
    def deco(f):
        @functools.wraps(f)
        def m(self, *args, **kwargs):
            try:
                return f(self, *args, **kwargs)
            except Exception:
                err = _parser.method_error(name, args, kwargs)
                if err is None:
                    raise
            raise err from None
        return m
    return deco


def check_untraced(self: Tensor, name: str) -> None:
    """Refuse an in-place shape change, inside a step ``funcgrad.jit`` traces, of a tensor the step
    did not make (an input, state): the change is the Python object's, made once per trace, not
    per call (and the trace would see the tensor change shape under it)."""
    f = _storage.current()
    if f is not None and f.mark_new and type(self._cell) is not _storage._TracedCell:
        raise RuntimeError(
            f"{name}() inside a funcgrad.jit step changes the shape of a tensor the step did not "
            f"create (an input or state), which a compiled step cannot repeat on each call: call "
            f"it outside the step, on a tensor the step makes (x = x.clone()), or use the "
            f"out-of-place form")


def carry_tangent(self: Tensor, out: Tensor, holder) -> None:
    """Under forward AD, before ``self`` takes ``out``'s geometry in place: ``self``'s tangent
    becomes ``out``'s, and a root's goes to the storage's ``holder`` (its later views read it
    there)."""
    level = _tensor.DUAL[0]
    if level is None:
        return
    st = level.tangent(self)
    if st is None:
        return
    if holder is not None:
        level.set(holder, st)
    level.set(self, level.tangent(out))


def _ints(v) -> tuple:
    return (int(v),) if isinstance(v, int) else tuple(int(s) for s in v)


@export("as_strided")
def as_strided(input: Tensor, size, stride, storage_offset=None) -> Tensor:
    """A view of ``input``'s storage with these sizes and strides, from ``storage_offset``
    (default: ``input``'s own).

    >>> import funcgrad
    >>> funcgrad.arange(6.0).as_strided((2, 3), (1, 1), 1)
    tensor([[1., 2., 3.],
            [2., 3., 4.]])
    """
    root = _root(input)
    static = _geometry(input, size, stride, storage_offset, root)
    if input._viewinfo is None:
        return apply(_as_strided, input, **static)
    # from a view: the gradient goes to the view (its own node), the values are the storage's
    out = apply(_as_strided_view, input, root.detach(), **static, in_geometry=input._layout())
    return _as_view_of(out, root, static, input._view_owner())


@export("as_strided_", function=False)
@_parsed("as_strided_")
def as_strided_(self: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``self`` made the ``as_strided`` view of its storage, in place (PyTorch's
    ``AsStridedBackward1``); a root tensor's storage is then held by a tensor of its own."""
    check_untraced(self, "as_strided_")
    self._check_inplace()
    root = _root(self)
    static = _geometry(self, size, stride, storage_offset, root)
    out = apply(_as_strided_inplace, self, root.detach(), **static, in_geometry=self._layout())
    old = self._viewinfo
    if old is None:  # (the storage's holder: the root's cell, no autograd identity)
        root = Tensor._wrap(None)
        root._cell, root._ver = self._cell, self._ver
    carry_tangent(self, out, root if old is None else None)
    # (PyTorch's as_strided_ leaves a tensor that was no view no view: owner False)
    _as_view_of(out, root, static, False if old is None else old.owner)
    self._viewinfo = out._viewinfo
    if self._ver is not None:  # (PyTorch bumps the version)
        self._ver[0] += 1
    if out._grad_fn is not None:
        self._set_grad_fn(out._grad_fn, 0)
    return self


@export("as_strided_scatter", tensors=("input", "src"))
def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset=None) -> Tensor:
    """``input`` (as a new contiguous tensor) with its ``as_strided`` elements replaced by ``src``.

    >>> import funcgrad
    >>> funcgrad.zeros(6).as_strided_scatter(funcgrad.ones(3), (3,), (2,), 1)
    tensor([0., 1., 0., 1., 0., 1.])
    """
    size, stride = _ints(size), _ints(stride)
    base = input.storage_offset()
    offset = base if storage_offset is None else int(storage_offset)
    check_geometry(size, stride, offset, input.dtype.itemsize, base + input.numel())
    if tuple(src.shape) != size:
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
            f"slice size = {list(size)}"
        )
    if overlaps(size, stride):
        raise RuntimeError(_OVERLAP)
    if src.dtype is not input.dtype:
        src = src.to(input.dtype)
    return apply(_as_strided_scatter, input, src, size=size, stride=stride, storage_offset=offset, base=base)


__all__ = ["as_strided", "as_strided_", "as_strided_scatter", "check_geometry", "overlaps", "check_untraced",
           "carry_tangent"]
