"""Op table — more names real scripts use (continuing more3.py): ``gcd``/``lcm``, ``inner``,
``matrix_exp`` (``linalg.matrix_exp``'s alias), ``Tensor.sum_to_size``, ``fill_diagonal_``,
``diagonal_scatter``/``select_scatter``/``slice_scatter``, ``new_empty_strided``, ``unravel_index``,
``masked_scatter``.

The scatters are ops of their own (PyTorch's ``*ScatterBackward0`` nodes: the gradient to
``input`` is zero where ``src`` went, ``src``'s is the gradient there); ``inner``,
``sum_to_size`` and ``unravel_index`` are PyTorch's composites of existing ops, so their nodes
are PyTorch's (``ViewBackward0`` of a tensordot, ``SumBackward1``, ``MulBackward0``).
"""

from __future__ import annotations

import itertools
import operator
import warnings

import jax.numpy as jnp
import numpy as np

from .. import _dtype
from .._broadcast import expand_size, infer_size
from .._factories import empty, tensor
from .._tensor import _is_tracer, _scalar_type_name, _wrap_dim
from ._registry import METHODS, Tensor, apply, defop, export, inplace_method
from ._registry import write_out as _out
from .linalg import tensordot
from .linalg2 import matrix_exp as _linalg_matrix_exp
from .shape_more import unbind

# ================================ gcd / lcm ======================================================
_gcd = defop("gcd", jnp.gcd, None, promote="binary", accepts="i", kernel="gcd_cpu")
_lcm = defop("lcm", jnp.lcm, None, promote="binary", accepts="i", kernel="lcm_cpu")


@export("gcd", tensors=("input", "other"))
def gcd(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The greatest common divisor of integers, elementwise (non-negative; ``gcd(0, 0) = 0``).

    >>> import funcgrad
    >>> funcgrad.gcd(funcgrad.tensor([12, 18, -4]), funcgrad.tensor([8, 27, 6]))
    tensor([4, 9, 2])
    """
    return _out(apply(_gcd, input, other), out)


@export("lcm", tensors=("input", "other"))
def lcm(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The least common multiple of integers, elementwise (non-negative; 0 with a 0).

    >>> import funcgrad
    >>> funcgrad.lcm(funcgrad.tensor([12, 18, -4]), funcgrad.tensor([8, 27, 6]))
    tensor([24, 54, 12])
    """
    return _out(apply(_lcm, input, other), out)


inplace_method("gcd_", gcd, tensors=("other",))
inplace_method("lcm_", lcm, tensors=("other",))


@export("gcd_", method=False, tensors=("input", "other"))
def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """``input.gcd_(other)`` (``torch.gcd_``)."""
    return input.gcd_(other)


@export("lcm_", method=False, tensors=("input", "other"))
def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """``input.lcm_(other)`` (``torch.lcm_``)."""
    return input.lcm_(other)


# ================================ inner / matrix_exp / sum_to_size ===============================
@export("inner", tensors=("input", "other"))
def inner(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The sum of products over the last dims (a 0-d operand: the product), as ``tensordot``.

    >>> import funcgrad
    >>> funcgrad.inner(funcgrad.tensor([1.0, 2.0]), funcgrad.tensor([[3.0, 4.0], [5.0, 6.0]]))
    tensor([11., 17.])
    """
    if input.ndim == 0 or other.ndim == 0:
        return _out(input * other, out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    if input.dtype is not other.dtype:  # (tensordot's check)
        raise RuntimeError("both inputs should have same dtype")
    return _out(tensordot(input, other, ([-1], [-1])), out)


@export("matrix_exp")
def matrix_exp(input: Tensor) -> Tensor:
    """``linalg.matrix_exp`` (``torch.matrix_exp`` / ``Tensor.matrix_exp``)."""
    return _linalg_matrix_exp(input)


@export("sum_to_size", function=False)
def sum_to_size(self: Tensor, *size) -> Tensor:
    """``self`` summed down to ``size``, which it must be expandable from (ATen's ``sum_to``:
    leading dims summed away, dims of size 1 in ``size`` summed with keepdim); ``self`` itself
    when nothing is summed.

    >>> import funcgrad
    >>> funcgrad.ones(3, 4).sum_to_size(1, 4)
    tensor([[3., 3., 3., 3.]])
    """
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    have = tuple(self.shape)
    lead = len(have) - len(shape)
    pairs = list(zip(shape, have[lead:], strict=True)) if lead >= 0 else []
    if lead < 0 or any(s != 1 and s != h for s, h in pairs):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(have)}}}.")
    dims = list(range(lead)) + [lead + i for i, (s, h) in enumerate(pairs) if s == 1 and h != 1]
    if not dims:
        return self
    r = self.sum(dims, keepdim=True)
    return r.view(shape) if lead else r


# ================================ fill_diagonal_ =================================================
def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal (every dim's index equal) in place, through a view of it as
    PyTorch's ``as_strided`` (so the node is ``CopySlices``); ``wrap``: a tall matrix's diagonal
    starts again every ``width + 1`` rows.

    >>> import funcgrad
    >>> funcgrad.zeros(2, 3).fill_diagonal_(5.0)
    tensor([[5., 0., 0.],
            [0., 5., 0.]])
    """
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    h, w = self.shape[0], self.shape[-1]
    if self.ndim == 2 and wrap and h > w + 1:  # (blocks of w rows, each after one row left out)
        for b in range(0, h, w + 1):
            self[b:b + w].diagonal().fill_(fill_value)
        return self
    d = self.diagonal(0, 0, 1)
    while d.ndim > 1:
        d = d.diagonal(0, 0, -1)
    d.fill_(fill_value)
    return self


METHODS["fill_diagonal_"] = fill_diagonal_


# ================================ diagonal / select / slice scatter ==============================
def _diag_index(shape, offset, dim1, dim2):
    """The index of ``diagonal(offset, dim1, dim2)``'s elements (with ``...`` for the rest, in
    diagonal's order: the other dims, then the diagonal last) and the diagonal's length."""
    n = max(0, min(shape[dim1] + min(offset, 0), shape[dim2] - max(offset, 0)))
    return n, (jnp.arange(n) - min(offset, 0), jnp.arange(n) + max(offset, 0))


def _diagonal_scatter_fn(x, src, offset, dim1, dim2):
    xt = jnp.moveaxis(x, (dim1, dim2), (-2, -1))
    _, (r, c) = _diag_index(x.shape, offset, dim1, dim2)
    return jnp.moveaxis(xt.at[..., r, c].set(src), (-2, -1), (dim1, dim2))


def _select_scatter_fn(x, src, dim, index):
    return x.at[(slice(None),) * dim + (index,)].set(src)


def _slice_scatter_fn(x, src, dim, start, end, step):
    return x.at[(slice(None),) * dim + (slice(start, end, step),)].set(src)


_diagonal_scatter = defop("diagonal_scatter", _diagonal_scatter_fn, "DiagonalScatterBackward0")
_select_scatter = defop("select_scatter", _select_scatter_fn, "SelectScatterBackward0")
_slice_scatter = defop("slice_scatter", _slice_scatter_fn, "SliceScatterBackward0")


def _check_src(src: Tensor, want, input: Tensor) -> None:
    if tuple(src.shape) != tuple(want):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(want)}")


def _as_input_dtype(src: Tensor, input: Tensor) -> Tensor:  # (ATen copies src into a clone of input)
    return src if src.dtype is input.dtype else src.to(input.dtype)


@export("diagonal_scatter", tensors=("input", "src"))
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input`` with its ``diagonal(offset, dim1, dim2)`` replaced by ``src`` (a new tensor).

    >>> import funcgrad
    >>> funcgrad.diagonal_scatter(funcgrad.zeros(2, 2), funcgrad.ones(2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    want = input.diagonal(offset, dim1, dim2).shape
    _check_src(src, want, input)
    d1, d2 = _wrap_dim(dim1, input.ndim), _wrap_dim(dim2, input.ndim)
    return apply(_diagonal_scatter, input, _as_input_dtype(src, input), offset=int(offset), dim1=d1, dim2=d2)


@export("select_scatter", tensors=("input", "src"))
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with ``select(dim, index)`` replaced by ``src`` (a new tensor).

    >>> import funcgrad
    >>> funcgrad.select_scatter(funcgrad.zeros(2, 2), funcgrad.ones(2), 0, 0)
    tensor([[1., 1.],
            [0., 0.]])
    """
    want = input.select(dim, index).shape  # (select's IndexError for an index out of range)
    _check_src(src, want, input)
    d = _wrap_dim(dim, input.ndim)
    i = index + input.shape[d] if index < 0 else index
    return apply(_select_scatter, input, _as_input_dtype(src, input), dim=d, index=int(i))


@export("slice_scatter", tensors=("input", "src"))
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """``input`` with the slice ``start:end:step`` of ``dim`` replaced by ``src`` (a new tensor).

    >>> import funcgrad
    >>> funcgrad.slice_scatter(funcgrad.zeros(4), funcgrad.ones(2), start=2)
    tensor([0., 0., 1., 1.])
    """
    d = _wrap_dim(dim, input.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    start_, end_, _ = slice(start, end, step).indices(input.shape[d])
    want = list(input.shape)
    want[d] = len(range(start_, max(start_, end_), step))
    _check_src(src, want, input)
    return apply(_slice_scatter, input, _as_input_dtype(src, input), dim=d, start=start_,
                 end=max(start_, end_), step=int(step))


# ================================ new_empty_strided / unravel_index ==============================
@export("new_empty_strided", function=False)
def new_empty_strided(self: Tensor, size, stride, *, dtype=None, layout=None, device=None,
                      requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` with ``self``'s dtype (as ``empty_strided``: the
    strides are checked, the tensor is laid out contiguously)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    return empty(size, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)


@export("unravel_index", method=False)
def unravel_index(indices: Tensor, shape) -> tuple:
    """The coordinates in an array of ``shape`` of each flat index (PyTorch's composite: floor
    division and remainder, so an index out of range wraps).

    >>> import funcgrad
    >>> funcgrad.unravel_index(funcgrad.tensor([4, 1]), (2, 3))
    (tensor([1, 0]), tensor([1, 1]))
    """
    if not isinstance(indices, Tensor) or not indices.dtype._kind == "i":
        got = indices.dtype if isinstance(indices, Tensor) else type(indices)
        raise TypeError(f"expected 'indices' to be integer dtype, but got {got}")
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    elif isinstance(shape, (tuple, list)):
        for d in shape:
            if not isinstance(d, int) or isinstance(d, bool):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
        shape = tuple(shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)), func=operator.mul))))
    r = indices.unsqueeze(-1).floor_divide(tensor(coefs, dtype=_dtype.int64))
    r = r % tensor(shape, dtype=_dtype.int64)
    return tuple(unbind(r, -1))


# ================================ masked_scatter =================================================
def _masked_scatter_fn(x, mask, src):
    x, mask = jnp.broadcast_arrays(x, mask)
    if src.size == 0:
        return jnp.where(mask, jnp.zeros((), x.dtype), x)
    # the k-th True of the mask (row-major) takes src's k-th element
    idx = jnp.clip(jnp.cumsum(mask.ravel()) - 1, 0, src.size - 1)
    return jnp.where(mask, src.ravel()[idx].reshape(x.shape), x)


_masked_scatter = defop("masked_scatter", _masked_scatter_fn, "MaskedScatterBackward0", diff=(0, 2))


def _masked_scatter_checks(input: Tensor, mask: Tensor, source: Tensor, shape) -> None:
    if mask.dtype is not _dtype.bool_:
        if mask.dtype is _dtype.uint8:
            warnings.warn("masked_scatter_ received a mask with dtype torch.uint8, this behavior is now "
                          "deprecated,please use a mask with dtype torch.bool instead.", UserWarning,
                          stacklevel=3)
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_scalar_type_name(mask.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_scalar_type_name(input.dtype)} and {_scalar_type_name(source.dtype)}")
    m = mask._value
    if not _is_tracer(m):  # (data-dependent: checked in eager code only)
        ones = int(np.broadcast_to(np.asarray(m), shape).sum())
        if source.numel() < ones:
            raise RuntimeError("Number of elements of source < number of ones in mask")


@export("masked_scatter", tensors=("input", "mask", "source"))
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``input`` (broadcast with ``mask``) with its masked elements, in row-major order, taken
    from ``source``'s leading elements (``MaskedScatterBackward0``).

    >>> import funcgrad
    >>> m = funcgrad.tensor([[True, False, True], [False, True, True]])
    >>> funcgrad.zeros(2, 3).masked_scatter(m, funcgrad.arange(6.0))
    tensor([[0., 0., 1.],
            [0., 2., 3.]])
    """
    shape = infer_size(mask.shape, input.shape)  # (ATen: expand_outplace(mask, self))
    _masked_scatter_checks(input, mask, source, shape)
    return apply(_masked_scatter, input, mask, source)


def _masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    have, target = tuple(mask.shape), tuple(self.shape)
    expand_size(have, target, "CPUBoolType")
    return masked_scatter(self, mask, source)


inplace_method("masked_scatter_", _masked_scatter_, tensors=("mask", "source"))
