"""``funcgrad.signal.windows`` (``torch.signal.windows``): SciPy-style windows, symmetric by
default (``sym=True``; ``funcgrad.hann_window`` and its kin are periodic by default).

PyTorch writes these in Python over its public ops (torch/signal/windows/windows.py); they are
the same composites here over funcgrad's, so ``requires_grad=True`` gives a result with PyTorch's
``grad_fn`` (the window of a ``linspace`` leaf) and the values are PyTorch's up to the last bits
of ``linspace``/``sin``/``cos``/``exp``/``i0`` in float32.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .. import _dtype
from .._factories import arange, empty, linspace, ones, tensor
from .._ops.pointwise import minimum
from .._strides import strided
from .._tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype, layout):
    """PyTorch's checks of a window's arguments; returns its dtype (the default one for None)."""
    dtype = _dtype.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_dtype.float32, _dtype.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _empty(dtype, device, requires_grad) -> Tensor:
    return empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)


def _ones(dtype, device, requires_grad) -> Tensor:
    return ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype=None,
                layout=strided, device=None, requires_grad: bool = False) -> Tensor:
    """``exp(-|n - center| / tau)``.

    >>> import funcgrad
    >>> funcgrad.signal.windows.exponential(4)
    tensor([0.2231, 0.6065, 0.6065, 0.2231])
    """
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = linspace(-center * constant, (-center + (M - 1)) * constant, M, dtype=dtype, device=device,
                 requires_grad=requires_grad)
    return (-k.abs()).exp()


def cosine(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
           requires_grad: bool = False) -> Tensor:
    """A sine arch (SciPy's cosine window)."""
    dtype = _checks("cosine", M, dtype, layout)
    if M == 0:
        return _empty(dtype, device, requires_grad)
    start = 0.5
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = linspace(start * constant, (start + (M - 1)) * constant, M, dtype=dtype, device=device,
                 requires_grad=requires_grad)
    return k.sin()


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """``exp(-(n - c)^2 / (2 std^2))``."""
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = linspace(start * constant, (start + (M - 1)) * constant, M, dtype=dtype, device=device,
                 requires_grad=requires_grad)
    return (-(k ** 2)).exp()


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=strided, device=None,
           requires_grad: bool = False) -> Tensor:
    """``I0(sqrt(beta^2 - k^2)) / I0(beta)`` over ``k`` from ``-beta`` to ``beta``."""
    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if M == 1:
        return _ones(dtype, device, requires_grad)
    beta = tensor(beta, dtype=dtype, device=device)  # (as PyTorch: avoids nan in the sqrt below)
    start = -beta
    constant = 2.0 * beta / (M if not sym else M - 1)
    end = minimum(beta, start + (M - 1) * constant)
    k = linspace(start, end, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return (beta * beta - k.pow(2)).sqrt().i0() / beta.i0()


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=strided, device=None,
                   requires_grad: bool = False) -> Tensor:
    """``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))`` (``M`` for ``sym=False``).

    >>> import funcgrad
    >>> funcgrad.signal.windows.general_cosine(3, a=[0.5, 0.5])
    tensor([0., 1., 0.])
    """
    dtype = _checks("general_cosine", M, dtype, layout)
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if M == 1:
        return _ones(dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = linspace(0, (M - 1) * constant, M, dtype=dtype, device=device, requires_grad=requires_grad)
    a_i = tensor([(-1) ** i * w for i, w in enumerate(a)], device=device, dtype=dtype,
                 requires_grad=requires_grad)
    i = arange(a_i.shape[0], dtype=a_i.dtype, device=device, requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=strided, device=None,
                    requires_grad: bool = False) -> Tensor:
    """``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False) -> Tensor:
    """The Hamming window (``general_hamming`` with alpha 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
         requires_grad: bool = False) -> Tensor:
    """The Hann window (``general_hamming`` with alpha 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """The Blackman window (``general_cosine`` with 0.42, 0.5, 0.08)."""
    dtype = _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """The triangular window ``1 - |k|`` over ``k`` from -1."""
    dtype = _checks("bartlett", M, dtype, layout)
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if M == 1:
        return _ones(dtype, device, requires_grad)
    start = -1
    constant = 2 / (M if not sym else M - 1)
    k = linspace(start, start + (M - 1) * constant, M, dtype=dtype, device=device,
                 requires_grad=requires_grad)
    return 1 - k.abs()


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False) -> Tensor:
    """The minimum 4-term Blackman-Harris window (Nuttall's)."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype,
                          layout=layout, device=device, requires_grad=requires_grad)
