"""Window functions (``funcgrad.hann_window`` … ``kaiser_window``): PyTorch's factories from
aten/src/ATen/native/TensorFactories.cpp, step for step.

Each window is PyTorch's sequence of ops on ``arange(N)`` in the requested dtype (``N`` one more
when ``periodic``, the last element then dropped): every step rounds to that dtype, each Python
scalar is first cast to the dtype's op-math type (float32 for float16/bfloat16), as its
TensorIterator does, so the values are PyTorch's but for the last bit of ``cos`` (XLA's and
Sleef's float32 ``cos`` may round differently). They are leaves, never differentiated
(``requires_grad=`` makes a leaf that requires grad).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import jax.scipy.special as jsp

from .. import _dtype
from .._factories import _finish
from .._tensor import _scalar_type_name
from ._registry import export

# PyTorch prints the refused dtype inside its TensorOptions, by C++ type name
_CPP_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool"}


def _dtype_of(name: str, window_length, dtype):
    """``window_function_checks``: an int length, a floating dtype (a complex one fails in
    ``arange`` as in PyTorch), a length of at least 0."""
    if not isinstance(window_length, int) or isinstance(window_length, bool):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    d = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    if d.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{_scalar_type_name(d)}'")
    if not d.is_floating_point:
        # (PyTorch's options here never carry requires_grad: it is set on the result afterwards)
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{_CPP_NAMES[d.name]}, device=cpu, layout=Strided (default), requires_grad=false "
                           f"(default), pinned_memory=false, memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    return d


class _Steps:
    """Ops as PyTorch's CPU kernels run them on a tensor of dtype ``d``: in its op-math type,
    a Scalar cast to that type first, the result rounded to ``d``."""

    def __init__(self, d):
        self.d = d.np
        self.m = jnp.float32 if d in (_dtype.float16, _dtype.bfloat16) else d.np

    def arange(self, n):
        return jnp.arange(n, dtype=self.d)

    def _r(self, v):
        return v.astype(self.d)

    def _s(self, s):  # a Python scalar: a wrapped 0-d tensor of the tensor's dtype, then op-math
        return jnp.asarray(s, self.d).astype(self.m)

    def mul(self, a, s):
        return self._r(a.astype(self.m) * self._s(s))

    def add(self, a, s):
        return self._r(a.astype(self.m) + self._s(s))

    def sub(self, a, b):
        return self._r(a.astype(self.m) - b.astype(self.m))

    def cos(self, a):  # float32: correctly rounded (float64's cos), as Sleef's and glibc's almost always are
        return self._r(jnp.cos(a.astype(jnp.float64)).astype(self.m))


def _window(name, window_length, periodic, dtype, requires_grad, body):
    d = _dtype_of(name, window_length, dtype)
    if window_length == 0:
        v = jnp.zeros((0,), d.np)
    elif window_length == 1:
        v = jnp.ones((1,), d.np)
    else:
        n = window_length + 1 if periodic else window_length
        v = body(_Steps(d), n)
        v = v[:n - 1] if periodic else v
    return _finish(v, requires_grad, None)


def _hamming(alpha, beta):
    def body(k, n):
        w = k.mul(k.arange(n), math.pi * 2.0 / (n - 1))
        return k.add(k.mul(k.cos(w), -beta), alpha)
    return body


def _blackman(k, n):
    w = k.mul(k.arange(n), math.pi / (n - 1))
    return k.add(k.sub(k.mul(k.cos(k.mul(w, 4)), 0.08), k.mul(k.cos(k.mul(w, 2)), 0.5)), 0.42)


def _bartlett(k, n):
    w = k.mul(k.arange(n), 2.0 / (n - 1))
    half = ((n - 1) >> 1) + 1
    return jnp.concatenate([w[:half], k.add(k.mul(w[half:], -1), 2)])


def _kaiser(beta):
    def body(k, n):  # PyTorch's kaiser_window kernel: one op-math expression per element
        m = k.m
        alpha, b = jnp.asarray((n - 1) / 2.0, m), jnp.asarray(beta, m)
        a = jnp.arange(n, dtype=k.d).astype(m)
        r = (a - alpha) / alpha
        return k._r(jsp.i0(b * jnp.sqrt(jnp.abs(1 - r * r))) / jsp.i0(b))
    return body


@export("hann_window", method=False)
def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                requires_grad: bool = False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))`` (``N`` = length + 1 when ``periodic``).

    >>> import funcgrad
    >>> funcgrad.hann_window(4)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    _dtype_of("hann_window", window_length, dtype)
    return _window("hamming_window", window_length, periodic, dtype, requires_grad, _hamming(0.5, 0.5))


@export("hamming_window", method=False)
def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, layout=None, device=None, requires_grad: bool = False):
    """The generalised Hamming window ``alpha - beta cos(2 pi n / (N - 1))``.

    >>> import funcgrad
    >>> funcgrad.hamming_window(4, periodic=False)
    tensor([0.0800, 0.7700, 0.7700, 0.0800])
    """
    return _window("hamming_window", window_length, periodic, dtype, requires_grad, _hamming(alpha, beta))


@export("blackman_window", method=False)
def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, _blackman)


@export("bartlett_window", method=False)
def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False):
    """The triangular Bartlett window (rising ``2n / (N - 1)``, then falling to 0).

    >>> import funcgrad
    >>> funcgrad.bartlett_window(5, periodic=False)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, _bartlett)


@export("kaiser_window", method=False)
def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, layout=None,
                  device=None, requires_grad: bool = False):
    """The Kaiser window ``I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta)``, ``a = (N - 1) / 2``."""
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, _kaiser(beta))
