"""Op table — ``funcgrad.poisson``: PyTorch's CPU Poisson sampler, draw for draw.

PyTorch's ``_s_poisson_cpu`` runs serially over the elements, each drawing doubles
``(random64() & (2^53 - 1)) · 2^-53`` from the generator's mt19937 stream: a product of uniforms
below rate 10, Hörmann's transformed rejection (PTRS) from 10 on. The same loop runs here on
the host over funcgrad's copy of that stream (``funcgrad/_random``), so a seed gives PyTorch's
numbers. Its node is ``PoissonBackward0``, whose gradient is zero, as PyTorch's.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .._random import generator_or_default
from .._tensor import _scalar_type_name
from ._registry import Tensor, apply, defop, export

_MASK53 = (1 << 53) - 1


def _uniform(eng):
    r = eng.raw(2)
    return ((int(r[0]) << 32 | int(r[1])) & _MASK53) * 2.0 ** -53


def _sample(lam: float, eng) -> int:
    """PyTorch's ``sample_poisson`` (aten/src/ATen/native/Distributions.cpp)."""
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = _uniform(eng) - 0.5
            v = _uniform(eng)
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            # (log of 0 is -inf in C; Python raises)
            logv = math.log(v) if v > 0 else -math.inf
            if logv + math.log(invalpha) - math.log(a / (us * us) + b) <= -lam + k * loglam - math.lgamma(k + 1.0):
                return k
    if lam == 0:
        return 0
    enlam, x, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= _uniform(eng)
        if prod > enlam:
            x += 1
        else:
            return x


# the samples are computed on the host; the op records PyTorch's node with its zero gradient
_poisson = defop("poisson", lambda rates, samples: samples.astype(rates.dtype), "PoissonBackward0", diff=(0,),
                 jvp=lambda primals, tangents, out: jnp.zeros_like(out))


@export("poisson", method=False)
def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson samples with rates ``input`` (PyTorch's values for the same seed).

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.poisson(funcgrad.tensor([0.5, 3.0, 12.0, 0.0, 100.0]))
    tensor([ 2.,  4., 13.,  0., 99.])
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{_scalar_type_name(input.dtype)}'")
    rates = np.asarray(input._concrete("poisson()"), np.float64).ravel()
    if rates.size and not (rates >= 0).all():  # (nan is refused too, as PyTorch's lambda >= 0 check)
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    g = generator_or_default(generator)
    with g._lock:
        eng = g._cell.engine()
        out = np.array([_sample(float(r), eng) for r in rates], np.float64).reshape(input.shape)
    return apply(_poisson, input, jnp.asarray(out))
