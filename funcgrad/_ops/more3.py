"""Op table — more top-level names (continuing more2.py): ``gradient``, ``cumulative_trapezoid``,
``vander``, ``chain_matmul``, ``empty_strided``.

All are PyTorch's composites over existing ops, so their nodes are PyTorch's (``CatBackward0``,
``CumsumBackward0``, ``FlipBackward0``/``CopySlices``); ``cumulative_trapezoid`` with sample points
ends in ATen's division by a Scalar (``DivBackward1``), the one op declared here.
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp

from .. import _dtype, _runtime
from .._factories import empty, ones
from .._tensor import _wrap_dim
from ._registry import Tensor, apply, defop, export
from .decomp import multi_dot
from ._registry import write_out as _out
from .shape import cat
from .shape_more import flip


# ================================ gradient / cumulative_trapezoid =================================
def _spacings(input, spacing, dims, dim_given):
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims) and not dim_given:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to 'self.dim() = {input.ndim}', since dim argument was not given, but got "
                               f"a list of length {len(spacing)}")
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing "
                               f"and dim arguments to have the same length, but got a spacing argument of "
                               f"length {len(spacing)} and a dim argument of length {len(dims)}.")
        return list(spacing)
    if isinstance(spacing, Tensor):
        if spacing.ndim != 0:
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or a list")
        return [spacing] * len(dims)
    return [spacing] * len(dims)


def _gradient_dim(a, h, d, edge_order):
    n = a.shape[d]
    if isinstance(h, Tensor) and h.ndim == 1:  # coordinates: PyTorch's non-uniform formulas
        if h.shape[0] != n:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device, and each "
                               f"coordinate tensor to have the size of dimension {d}")
        shape = [1] * a.ndim
        shape[d] = -1
        ax = h.diff().reshape(shape)
        a_ = ax.narrow(d, 0, n - 2)
        b_ = ax.narrow(d, 1, n - 2)
        c = (a.narrow(d, 2, n - 2) * a_ * a_ - a.narrow(d, 0, n - 2) * b_ * b_
             + a.narrow(d, 1, n - 2) * (b_ * b_ - a_ * a_)) / (a_ * b_ * (a_ + b_))
        h0, hn = ax.narrow(d, 0, 1), ax.narrow(d, n - 2, 1)
        if edge_order == 1:
            pre = (a.narrow(d, 1, 1) - a.narrow(d, 0, 1)) / h0
            app = (a.narrow(d, n - 1, 1) - a.narrow(d, n - 2, 1)) / hn
        else:
            raise NotImplementedError("funcgrad.gradient: edge_order=2 with coordinate tensors is not supported")
        return cat([pre, c, app], d)
    c = (a.narrow(d, 2, n - 2) - a.narrow(d, 0, n - 2)) / (2 * h) if n > 2 else a.narrow(d, 0, 0)
    if edge_order == 1:
        pre = (a.narrow(d, 1, 1) - a.narrow(d, 0, 1)) / h
        app = (a.narrow(d, n - 1, 1) - a.narrow(d, n - 2, 1)) / h
    else:
        pre = (-1.5 * a.narrow(d, 0, 1) + 2 * a.narrow(d, 1, 1) - 0.5 * a.narrow(d, 2, 1)) / h
        app = (0.5 * a.narrow(d, n - 3, 1) - 2 * a.narrow(d, n - 2, 1) + 1.5 * a.narrow(d, n - 1, 1)) / h
    return cat([pre, c, app], d)


def gradient(input, *, spacing=1, dim=None, edge_order: int = 1):
    """Central differences in the interior, one-sided at the ends, along each of ``dim`` (a tuple
    of tensors, each ``CatBackward0``).

    >>> import funcgrad
    >>> funcgrad.gradient(funcgrad.tensor([1.0, 2.0, 4.0, 8.0]))
    (tensor([1.0000, 1.5000, 3.0000, 4.0000]),)
    """
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, input.ndim) for d in dims]
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    hs = _spacings(input, spacing, dims, dim is not None)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    return tuple(_gradient_dim(input, h, d, edge_order) for h, d in zip(hs, dims))


def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral along ``dim`` (one fewer element there).

    >>> import funcgrad
    >>> funcgrad.cumulative_trapezoid(funcgrad.tensor([1.0, 2.0, 3.0]))
    tensor([1.5000, 4.0000])
    """
    d = _wrap_dim(dim, y.ndim)
    n = y.shape[d]
    left, right = y.narrow(d, 0, max(n - 1, 0)), y.narrow(d, 1, max(n - 1, 0)) if n else y
    if x is None:
        return ((1.0 if dx is None else dx) / 2.0 * (left + right)).cumsum(d)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = -1
        xd = x.diff().reshape(shape)
    else:
        xd = x.diff(dim=d)
    return apply(_div_scalar, (xd * (left + right)).cumsum(d), s=2.0)


# ATen's division by a Scalar (``div.Scalar``, ``DivBackward1``), which composites such as
# cumulative_trapezoid call; a Python ``t / 2.0`` is ``div.Tensor`` (``DivBackward0``)
_div_scalar = defop("div_scalar", lambda x, s: x / jnp.asarray(s, x.dtype), "DivBackward1", promote="float")


# ================================ vander / chain_matmul / empty_strided ===========================
def vander(x, N=None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of a 1-D tensor (powers decreasing unless ``increasing``).

    >>> import funcgrad
    >>> funcgrad.vander(funcgrad.tensor([1, 2, 3]))
    tensor([[1, 1, 1],
            [4, 2, 1],
            [9, 3, 1]])
    """
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = _dtype._np_promote(x.dtype, _dtype.int64)
    result = ones(x.shape[0], n, dtype=dt)
    if n > 1:
        result[:, 1:] = x.unsqueeze(1).repeat(1, n - 1)
        result[:, 1:].cumprod_(1)
    return result if increasing else flip(result, (1,))


def chain_matmul(*matrices, out=None) -> Tensor:
    """Deprecated product of matrices (PyTorch's warning); ``linalg.multi_dot`` of them."""
    if _runtime.warn_once(_warned):  # (PyTorch's TORCH_WARN_ONCE)
        warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                      "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                      "multiple parameters.", UserWarning, stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    r = matrices[0].clone() if len(matrices) == 1 else multi_dot(matrices)
    return _out(r, out, name="mm")


_warned = [False]


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """An uninitialised tensor of ``size`` (funcgrad's tensors are laid out contiguously: the
    values are those of ``empty``)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    return empty(size, dtype=dtype, device=device, requires_grad=requires_grad)


# ================================ predicates ======================================================
@export("is_signed", tensors=("input",))
def is_signed(input) -> bool:
    """Whether the tensor's dtype holds negative values (floats, complex, signed integers).

    >>> import funcgrad
    >>> funcgrad.is_signed(funcgrad.tensor([1])), funcgrad.tensor([1], dtype=funcgrad.uint8).is_signed()
    (True, False)
    """
    return input.dtype.is_signed


@export("is_inference", method=False, tensors=("input",))
def is_inference(input) -> bool:
    """Whether the tensor was made under ``inference_mode`` (``Tensor.is_inference``)."""
    return input.is_inference()
