"""In-place random fills and sampling methods (``Tensor.uniform_``, ``normal_``, ``random_``,
``bernoulli_``, ``exponential_``…), drawn from PyTorch's stream (``funcgrad._random._sample``)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .. import _factories
from .._random import _sample
from ._registry import Tensor, export


def _fill(self: Tensor, value) -> Tensor:
    self._check_inplace()
    return self._commit(Tensor._wrap(value))


def _floating(self: Tensor, name: str) -> None:
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}\" not implemented for '{self.dtype.name.capitalize()}'")


@export("uniform_", function=False)
def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator=None) -> Tensor:
    """Fill with U(from, to) in place.

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.empty(3).uniform_(-1, 1)
    tensor([-0.0075,  0.5364, -0.8230])
    """
    _floating(self, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _fill(self, _sample.uniform(generator, tuple(self.shape), self.dtype.np, float(from_), float(to)))


@export("normal_", function=False)
def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill with N(mean, std²) in place."""
    _floating(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill(self, _sample.normal(generator, tuple(self.shape), self.dtype.np, float(mean), float(std)))


@export("random_", function=False)
def random_(self, from_=None, to=None, *, generator=None) -> Tensor:
    """Integers in ``[from, to)``; ``random_(to)`` is ``[0, to)``; no bounds: PyTorch's full range."""
    shape, d = tuple(self.shape), self.dtype.np
    if from_ is None and to is None:
        return _fill(self, _sample.random_full(generator, shape, d))
    if to is None:
        from_, to = 0, from_
    if int(from_) >= int(to):
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={int(from_)} >= "
                           f"to={int(to)}")
    return _fill(self, _sample.random_int(generator, shape, d, int(from_), int(to)))


@export("bernoulli_", function=False)
def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
    """Fill with 0/1 draws, 1 with probability ``p`` (a float or a tensor of probabilities)."""
    if isinstance(p, Tensor):
        keep = _sample.bernoulli_tensor(generator, jnp.broadcast_to(p._value, tuple(self.shape)))
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        keep = _sample.bernoulli_scalar(generator, tuple(self.shape), float(p), self.dtype.np)
    return _fill(self, keep if keep.dtype == self.dtype.np else keep.astype(self.dtype.np))


export("bernoulli")(_factories.bernoulli)


@export("multinomial")
def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Category indices drawn from the rows of ``input`` (PyTorch's CPU algorithm)."""
    return _factories.multinomial(input, num_samples, replacement, generator=generator)


@export("exponential_", function=False)
def exponential_(self, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill with Exp(lambd) draws."""
    _floating(self, "exponential_cpu")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, _sample.exponential(generator, tuple(self.shape), self.dtype.np, float(lambd)))


@export("cauchy_", function=False)
def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill with Cauchy draws: ``median + sigma * tan(pi * (u - 0.5))`` (u: float64 uniforms)."""
    u = _sample.uniform(generator, tuple(self.shape), np.float64)
    return _fill(self, _sample.from_double(median + sigma * jnp.tan(math.pi * (u - 0.5)), self.dtype.np))


@export("log_normal_", function=False)
def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill with ``exp(N(mean, std²))`` draws (the scalar normal path, as PyTorch's kernel)."""
    g = _sample.generator_or_default(generator)
    n = math.prod(self.shape)
    z = np.asarray(_sample._normal_scalar(g, n, float(mean), float(std)), np.float64)
    return _fill(self, jnp.asarray(_sample.from_double(np.exp(z), self.dtype.np).reshape(tuple(self.shape))))


@export("geometric_", function=False)
def geometric_(self, p: float, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success."""
    u = _sample.uniform(generator, tuple(self.shape), np.float64)
    return _fill(self, jnp.ceil(jnp.log(u) / math.log1p(-p)).astype(self.dtype.np))
