"""``funcgrad.fft``: PyTorch's ``torch.fft`` (``fft``, ``ifft``, ``rfft``, ``irfft``, the 2-D and n-D
forms, ``fftfreq``, ``rfftfreq``, ``fftshift``, ``ifftshift``), differentiable, on ``jnp.fft``.

>>> import funcgrad
>>> funcgrad.fft.fft(funcgrad.tensor([1.0, 0.0, 0.0, 0.0]))
tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
>>> funcgrad.fft.rfft(funcgrad.tensor([1.0, 2.0, 3.0, 4.0]))
tensor([10.+0.j, -2.+2.j, -2.+0.j])
"""

from __future__ import annotations

import jax.numpy as jnp

from . import _dtype
from ._factories import _finish
from ._ops.fft import transform as _transform
from ._ops.shape_more import roll as _roll
from ._tensor import Tensor


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    return _transform(input, None if n is None else (n,), dim, norm, "full", False)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    return _transform(input, None if n is None else (n,), dim, norm, "full", True)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    return _transform(input, None if n is None else (n,), dim, norm, "r2c", False)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    return _transform(input, None if n is None else (n,), dim, norm, "c2r", True)


def fftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    return _transform(input, s, dim, norm, "c2c", False)


def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    return _transform(input, s, dim, norm, "c2c", True)


def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    return _transform(input, s, dim, norm, "r2c", False)


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    return _transform(input, s, dim, norm, "c2r", True)


def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return _transform(input, s, dim, norm, "c2c", False, default_all=False)


def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return _transform(input, s, dim, norm, "c2c", True, default_all=False)


def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return _transform(input, s, dim, norm, "r2c", False, default_all=False)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
    return _transform(input, s, dim, norm, "c2r", True, default_all=False)


def _freq(values, dtype, device, requires_grad) -> Tensor:
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    return _finish(jnp.asarray(values, d.np), requires_grad, device)


def fftfreq(n: int, d: float = 1.0, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Sample frequencies of an ``n``-point FFT with spacing ``d``.

    >>> import funcgrad
    >>> funcgrad.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    return _freq(jnp.fft.fftfreq(n, d), dtype, device, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _freq(jnp.fft.rfftfreq(n, d), dtype, device, requires_grad)


def _shift(input: Tensor, dim, sign: int) -> Tensor:
    dims = tuple(range(input.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    shifts = tuple(sign * (input.shape[k] // 2) if sign > 0 else -(input.shape[k] // 2) for k in dims)
    return _roll(input, shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Move the zero frequency to the centre (``RollBackward0``)."""
    return _shift(input, dim, 1)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    return _shift(input, dim, -1)


__all__ = ["fft", "ifft", "rfft", "irfft", "fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2",
           "irfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
