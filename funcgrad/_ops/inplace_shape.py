"""Op table — in-place shape methods: a tensor changes its own sizes and strides, keeping its
storage (``t_``, ``transpose_``/``swapdims_``/``swapaxes_``, ``squeeze_``, ``unsqueeze_``;
``resize_``, ``resize_as_``).

funcgrad's storage is the root tensor's array and a view reads it through a chain of view
steps (``_tensor._View``), so a tensor whose shape changes in place becomes a reader of its
storage through one more step: the step is recorded as the op PyTorch records for the in-place
form (``TBackward1``, ``TransposeBackward1``, ``SqueezeBackward3/4/5``, ``UnsqueezeBackward1``:
the same derivative as the out-of-place view), and the tensor takes the step's view info. A root
tensor's storage is then held by a tensor of its own (as ``as_strided_`` does); PyTorch does
not count the tensor as a view (``_base`` stays None; its ``owner`` is False).

``resize_`` keeps the storage's elements: it reads the storage contiguously from the tensor's
offset with the new sizes (an ``as_strided`` step). Where the storage is too small, PyTorch
grows it with uninitialised memory; funcgrad fills the new elements with zeros, so results are
deterministic, and the grown storage is the tensor's own (other views of the old storage keep
reading the old one).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import _strides, _tensor
from .._tensor import Size, _View, _wrap_dim
from ._registry import Tensor, apply, defop, export
from .shape import _t, _transpose, _view
from .strided import _as_strided, _parsed, carry_tangent, check_untraced

_t_ = defop("t_inplace", lambda x: x.T, "TBackward1", linear=True, view=True)
_transpose_op = defop("transpose_inplace", lambda x, d0, d1: jnp.swapaxes(x, d0, d1), "TransposeBackward1",
                    linear=True, view=True)
_squeeze_ = defop("squeeze_inplace", lambda x, dims: jnp.squeeze(x, dims), "SqueezeBackward3",
                  linear=True, view=True)
_squeeze_dim_ = defop("squeeze_dim_inplace", lambda x, dims: jnp.squeeze(x, dims), "SqueezeBackward4",
                      linear=True, view=True)
_squeeze_dims_ = defop("squeeze_dims_inplace", lambda x, dims: jnp.squeeze(x, dims), "SqueezeBackward5",
                       linear=True, view=True)
_unsqueeze_ = defop("unsqueeze_inplace", lambda x, dim: jnp.expand_dims(x, dim), "UnsqueezeBackward1",
                    linear=True, view=True)


def _holder(self: Tensor) -> Tensor:
    """A tensor holding ``self``'s storage (its cell and counter), no autograd identity."""
    h = Tensor._wrap(None)
    h._cell, h._ver = self._cell, self._ver
    return h


def _restride(self: Tensor, op, **static) -> Tensor:
    """``self`` made the view ``op`` of itself, in place: its node (where recorded) is the
    step's, its version bumped."""
    check_untraced(self, op.name.replace("_inplace", "_").replace("_dims_", "_").replace("_dim_", "_"))
    self._check_inplace()
    old = self._viewinfo
    out = apply(op, self, **static)
    vi, holder = out._viewinfo, None
    if old is None:  # a root: its storage is held by a tensor of its own from now on
        holder = _holder(self)
        vi = _View(holder, vi.chain, *vi.cg, False)
    else:  # (out's owner is self where self is no view of PyTorch's: keep self's)
        vi.owner = old.owner
    carry_tangent(self, out, holder)
    self._viewinfo = vi
    if self._ver is not None:
        self._ver[0] += 1
    if out._grad_fn is not None:
        self._set_grad_fn(out._grad_fn, 0)
    return self


def inverse_chain(chain, storage_shape) -> tuple:
    """The view steps taking a tensor that reads its storage (of ``storage_shape``) through
    ``chain`` back to the storage's shape: for an in-place write through a view made before its
    base's shape changed in place, whose steps start from the storage (``Tensor._commit``)."""
    sizes, inverse = [tuple(storage_shape)], []
    for step in chain:
        sizes.append(_strides.of_chain(sizes[-1], (step,))[0])
    for (op, skey, _), before in zip(reversed(chain), reversed(sizes[:-1]), strict=True):
        if op is _t_:
            inverse.append((_t, (), ()))
        elif op is _transpose_op:
            inverse.append((_transpose, skey, ()))
        elif op in (_squeeze_, _squeeze_dim_, _squeeze_dims_, _unsqueeze_):
            inverse.append((_view, (("shape", before),), ()))
        else:  # (as_strided_, resize_: their tensor may read part of the storage only)
            raise NotImplementedError(
                "funcgrad: an in-place write that needs a gradient, through a view made before "
                "its base's as_strided_() or resize_(), is not supported; take the view again")
    return tuple(inverse)


_tensor.register_above(inverse_chain=inverse_chain)


@export("t_", function=False)
@_parsed("t_")
def t_(self) -> Tensor:
    """``self`` transposed in place (≤ 2-D).

    >>> import funcgrad
    >>> x = funcgrad.arange(6.0).view(2, 3)
    >>> x.t_().shape, x.stride()
    (funcgrad.Size([3, 2]), (1, 3))
    """
    if self.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return _restride(self, _t_)


def _transpose_(self, dim0, dim1) -> Tensor:
    """``self`` with dims ``dim0`` and ``dim1`` swapped, in place."""
    n = self.ndim
    return _restride(self, _transpose_op, d0=_wrap_dim(dim0, n), d1=_wrap_dim(dim1, n))


transpose_ = export("transpose_", function=False)(_parsed("transpose_")(_transpose_))
export("swapdims_", function=False)(_parsed("swapdims_")(_transpose_))
export("swapaxes_", function=False)(_parsed("swapaxes_")(_transpose_))


@export("squeeze_", function=False)
@_parsed("squeeze_")
def squeeze_(self, dim=None, *dims) -> Tensor:
    """``self`` without its size-1 dims (or those of ``dim``: an int, or several), in place."""
    if dims:  # (PyTorch's parser takes squeeze_(0, 2) as the dims (0, 2))
        dim = (dim, *dims)
    n, shape = self.ndim, self.shape
    if dim is None:
        return _restride(self, _squeeze_, dims=tuple(i for i, s in enumerate(shape) if s == 1))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    dims = tuple(d for d in (_wrap_dim(d, n) for d in dims) if n and shape[d] == 1)
    return _restride(self, _squeeze_dims_ if isinstance(dim, (tuple, list)) else _squeeze_dim_, dims=dims)


@export("unsqueeze_", function=False)
@_parsed("unsqueeze_")
def unsqueeze_(self, dim) -> Tensor:
    """``self`` with a size-1 dim inserted at ``dim``, in place."""
    return _restride(self, _unsqueeze_, dim=_wrap_dim(dim, self.ndim + 1))


# ---- resize_ ------------------------------------------------------------------------------------
RESIZE_GRAD_MSG = "cannot resize variables that require grad"


def _sizes(sizes) -> tuple:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, Size)):
        sizes = sizes[0]
    for s in sizes:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"resize_(): argument 'size' (position 1) must be tuple of ints, not "
                            f"{type(s).__name__}")
    sizes = tuple(int(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError("numel: integer multiplication overflow")
    return sizes


def _strides_for(sizes, memory_format) -> tuple:
    cl = {_strides.channels_last: (1, 3, 2, 0), _strides.channels_last_3d: (1, 4, 3, 2, 0)}
    order = cl.get(memory_format)
    if order is None:
        return _strides.contiguous_strides(sizes)
    st, expected = [0] * len(sizes), 1
    for d in order:
        st[d] = expected
        expected *= max(sizes[d], 1)
    return tuple(st)


@export("resize_", function=False)
def resize_(self, *size, memory_format=None) -> Tensor:
    """``self`` with sizes ``size``, contiguous from its storage offset, in place; its storage's
    elements are kept (new ones, where it grows, are zeros: PyTorch leaves them uninitialised).

    >>> import funcgrad
    >>> funcgrad.arange(6.0).resize_(2, 2)
    tensor([[0., 1.],
            [2., 3.]])
    """
    sizes = _sizes(size)
    _strides.check_memory_format(memory_format, "resize_", len(sizes))
    if self._requires_grad:
        raise RuntimeError(RESIZE_GRAD_MSG)
    if _tensor.DUAL[0] is not None and _tensor.DUAL[0].tangent(self) is not None:
        raise RuntimeError("cannot resize variables that has a forward grad")
    check_untraced(self, "resize_")
    self._check_inplace()
    same = tuple(self.shape) == sizes
    if same and memory_format is None:
        return self
    stride = _strides_for(sizes, memory_format)
    if same and self.stride() == stride:
        return self
    offset = self.storage_offset()
    need = offset + (1 + sum((n - 1) * s for n, s in zip(sizes, stride, strict=True)) if all(sizes) else 0)
    storage = self._cell.value
    old = self._viewinfo
    if need > storage.size:  # grown: a storage of its own, the old elements first, then zeros
        flat = jnp.concatenate([storage.reshape(-1), jnp.zeros(need - storage.size, storage.dtype)])
        owner = False
        contiguous = old is None and offset == 0 and stride == _strides.contiguous_strides(sizes)
        self._cell, self._viewinfo = Tensor._wrap(flat.reshape(sizes) if contiguous else flat)._cell, None
        root = None if contiguous else _holder(self)
    else:
        owner = False if old is None else old.owner
        root = _holder(self) if old is None or old.owner is False else old.base
    if root is not None:
        static = {"size": sizes, "stride": stride, "storage_offset": offset}
        self._viewinfo = _View(root, ((_as_strided, tuple(static.items()), ()),), None, -1, owner)
    if not same and self._ver is not None:
        self._ver[0] += 1
    return self


@export("resize_as_", function=False, tensors=("the_template",))
def resize_as_(self, the_template, *, memory_format=None) -> Tensor:
    """``self`` resized in place to ``the_template``'s sizes (see ``resize_``)."""
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


__all__ = ["t_", "transpose_", "squeeze_", "unsqueeze_", "resize_", "resize_as_", "RESIZE_GRAD_MSG"]
