"""Op table — discrete Fourier transforms (``funcgrad.fft``), on ``jnp.fft``.

Three ops with PyTorch's node names: complex-to-complex (``FftC2CBackward0``: ``fft`` of complex
input, ``fftn``/``fft2`` of any input, the inverses), real-to-complex (``FftR2CBackward0``:
``rfft*``, and ``fft``/``ifft`` of real input, which PyTorch computes one-sided and mirrors) and
complex-to-real (``FftC2RBackward0``: ``irfft*``). Integer inputs become the default float
dtype first, as in PyTorch.
"""

from __future__ import annotations

import jax.numpy as jnp

from .._tensor import _wrap_dim
from ._registry import METHODS, Tensor, apply, defop, export

_C2C = {False: jnp.fft.fftn, True: jnp.fft.ifftn}
_R2C = {False: jnp.fft.fftn, True: jnp.fft.ifftn}


def _c2c(x, s, axes, norm, inverse):
    return _C2C[inverse](x, s=s, axes=axes, norm=norm)


def _r2c(x, s, axes, norm, inverse, onesided):
    if onesided:
        return jnp.fft.rfftn(x, s=s, axes=axes, norm=norm)
    return _R2C[inverse](x, s=s, axes=axes, norm=norm)


def _c2r(x, s, axes, norm):
    return jnp.fft.irfftn(x, s=s, axes=axes, norm=norm)


fft_c2c = defop("fft_c2c", _c2c, "FftC2CBackward0", promote="float")
fft_r2c = defop("fft_r2c", _r2c, "FftR2CBackward0", promote="float")
fft_c2r = defop("fft_c2r", _c2r, "FftC2RBackward0", promote="float")

_NORMS = (None, "backward", "ortho", "forward")


def _norm(norm):
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return "backward" if norm is None else norm


def _axes(x: Tensor, s, dim, default_all: bool):
    """PyTorch's (s, dim) defaults: all dims (or the last len(s)) for the n-d transforms."""
    if dim is None:
        dims = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
        if not default_all:
            dims = dims[-2:]
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(_wrap_dim(d, x.ndim) for d in dims)
    if s is not None:
        s = tuple(int(n) if n != -1 else x.shape[d] for n, d in zip(s, dims))
    return s, dims


def transform(x: Tensor, s, dim, norm, kind: str, inverse: bool, default_all: bool = True) -> Tensor:
    """``kind``: 'c2c', 'full' (fft of real input via r2c), 'r2c' (one-sided), 'c2r'."""
    if x.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    s, axes = _axes(x, s, dim, default_all)
    norm = _norm(norm)
    if kind == "c2r":
        return apply(fft_c2r, x, s=s, axes=axes, norm=norm)
    if kind == "r2c" or (kind == "full" and not x.dtype.is_complex):
        if x.dtype.is_complex:
            raise RuntimeError("rfftn expects a real-valued input tensor, but got " + _cname(x))
        return apply(fft_r2c, x, s=s, axes=axes, norm=norm, inverse=inverse, onesided=kind == "r2c")
    return apply(fft_c2c, x, s=s, axes=axes, norm=norm, inverse=inverse)


def _cname(x):
    return {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}.get(x.dtype.name, x.dtype.name)


# ---- real / imag parts (PyTorch reads them through view_as_real + select: ``SelectBackward0``) ----
_real = defop("real", jnp.real, "SelectBackward0", linear=True)
_imag = defop("imag", jnp.imag, "SelectBackward0", linear=True)


@export("real", method=False)
def real(input: Tensor) -> Tensor:
    """The real part of a complex tensor (a real tensor is returned as it is, as in PyTorch)."""
    return apply(_real, input) if input.dtype.is_complex else input


@export("imag", method=False)
def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return apply(_imag, input)


# ``x.real`` / ``x.imag`` are properties in PyTorch; funcgrad's are read-only (not views: a write
# through ``x.real[...]`` does not reach ``x``)
METHODS["real"] = property(real)
METHODS["imag"] = property(imag)
