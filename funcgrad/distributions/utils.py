"""``funcgrad.distributions.utils``: PyTorch's helpers (``broadcast_all``, ``probs_to_logits``,
``logits_to_probs``, ``clamp_probs``, ``lazy_property``), written with funcgrad ops so gradients flow.

>>> import funcgrad
>>> from funcgrad.distributions.utils import probs_to_logits
>>> probs_to_logits(funcgrad.tensor([0.5]), is_binary=True)
tensor([0.])
"""

from __future__ import annotations

import functools
import numbers

import jax
import numpy as np

from .. import _dtype
from .._factories import arange as _arange
from .._factories import randn as _randn
from .._factories import tensor as _tensor
from .._ops.shape_more import broadcast_tensors as _broadcast_tensors
from .._tensor import Size, Tensor
from ..autograd.grad_mode import enable_grad
from ..nn import functional as F

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values):
    """Broadcast tensors and numbers together (numbers take the first tensor's dtype)."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        dt = next((v.dtype for v in values if isinstance(v, Tensor)), None) or _dtype.get_default_dtype()
        values = [v if isinstance(v, Tensor) else _tensor(v, dtype=dt) for v in values]
    return _broadcast_tensors(*values)


def _standard_normal(shape, dtype, device=None) -> Tensor:
    return _randn(tuple(shape), dtype=dtype)


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def _finfo(dt):
    return np.finfo(dt.np)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Sigmoid of log-odds (binary), else softmax over the last dim."""
    if is_binary:
        return logits.sigmoid()
    return F.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Clamp into ``[eps, 1 - eps]`` for the dtype's machine epsilon."""
    eps = float(_finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds (binary) or log-probabilities of (clamped) probabilities."""
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


class lazy_property:
    """A non-data descriptor computed on first access (under grad mode), then cached."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _is_traced(t) -> bool:
    """True while a compiled step traces: validation (a data-dependent ``bool``) is skipped then."""
    return isinstance(getattr(t, "_value", None), jax.core.Tracer)


def _size(shape) -> Size:
    return Size(tuple(shape))


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (below diagonal ``diag``) of the last two dims, row by row, as a vector."""
    n = mat.shape[-1]
    if not _is_traced(mat) and (diag < -n or diag >= n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    arange = _arange(n)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec` (zeros above diagonal ``diag``)."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = float(_finfo(vec.dtype).eps)
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    arange = _arange(n)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    mat[..., tril_mask] = vec
    return mat
