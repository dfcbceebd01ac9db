"""In-place random fills and sampling methods (``Tensor.uniform_``, ``normal_``, ``random_``,
``bernoulli_``, ``exponential_``…), drawn from PyTorch's stream (``funcgrad._random._sample``)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .. import _factories, _meta
from .._random import _sample
from .._tensor import _dtype_cname, _scalar_type_name
from ._registry import Tensor, export


def _fill(self: Tensor, value) -> Tensor:
    self._check_inplace()
    return self._commit(Tensor._wrap(value))


def _g(x) -> str:
    """A double as ATen's messages print it (``operator<<``: 6 significant digits, no ``.0``)."""
    return f"{float(x):g}"


def _refuse(self: Tensor, kernel: str) -> None:
    """The ``NotImplementedError`` of ATen's dtype dispatch for ``kernel`` on ``self``'s dtype."""
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{_scalar_type_name(self.dtype)}'")


def _floating(self: Tensor, kernel: str) -> None:
    if not self.dtype.is_floating_point:
        _refuse(self, kernel)


def _empty(self: Tensor) -> bool:
    return math.prod(self.shape) == 0


@export("uniform_", function=False)
def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator=None) -> Tensor:
    """Fill with U(from, to) in place (a complex tensor: both parts, as ATen's ``view_as_real``).

    >>> import funcgrad
    >>> _ = funcgrad.manual_seed(0)
    >>> funcgrad.empty(3).uniform_(-1, 1)
    tensor([-0.0075,  0.5364, -0.8230])
    """
    part = self.dtype.to_real() if self.dtype.is_complex else self.dtype
    if self.dtype.is_complex and _empty(self):
        return self
    if not part.is_floating_point:
        _refuse(self, "check_uniform_bounds")
    info = jnp.finfo(part.np)
    lo, hi = float(info.min), float(info.max)
    for name, v in (("from", from_), ("to", to)):
        if not lo <= float(v) <= hi:
            raise RuntimeError(f"{name} is out of bounds for {_dtype_cname(part)}")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(from_)} > "
                           f"to={_g(to)}")
    if float(to) - float(from_) > hi:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{_scalar_type_name(part)}>"
                           f"::max(), but found to={_g(to)} and from={_g(from_)} which result in to-from "
                           f"to exceed the limit")
    if _meta.is_meta(self):  # (checked as PyTorch's; nothing drawn on the meta device)
        return _fill(self, self._value)
    return _fill(self, _sample.uniform(generator, tuple(self.shape), self.dtype.np, float(from_), float(to)))


@export("normal_", function=False)
def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill with N(mean, std²) in place (a complex tensor: each part N(mean, std² / 2), as ATen's)."""
    if std < 0:  # (PyTorch's meta kernel is Python: it prints the number as Python does)
        raise RuntimeError(f"normal expects std >= 0.0, but found std "
                           f"{std if _meta.is_meta(self) else _g(std)}")
    if _empty(self):
        return self
    if not self.dtype.is_complex:
        _floating(self, "normal_kernel_cpu")
    if _meta.is_meta(self):  # (checked as PyTorch's; nothing drawn on the meta device)
        return _fill(self, self._value)
    return _fill(self, _sample.normal(generator, tuple(self.shape), self.dtype.np, float(mean), float(std)))


@export("random_", function=False)
def random_(self, from_=None, to=None, *, generator=None) -> Tensor:
    """Integers in ``[from, to)``; ``random_(to)`` is ``[0, to)``; no bounds: PyTorch's full range."""
    if _meta.is_meta(self):  # (nothing drawn on the meta device, as PyTorch)
        return _fill(self, self._value)
    shape, d = tuple(self.shape), self.dtype.np
    if from_ is None and to is None:
        if _empty(self):
            return self
        if self.dtype.is_complex:
            _refuse(self, "random_kernel_cpu")
        return _fill(self, _sample.random_full(generator, shape, d))
    if to is None:
        from_, to = 0, from_
    if int(from_) >= int(to):
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={int(from_)} >= "
                           f"to={int(to)}")
    if self.dtype.is_complex:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    return _fill(self, _sample.random_int(generator, shape, d, int(from_), int(to)))


@export("bernoulli_", function=False)
def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
    """Fill with 0/1 draws, 1 with probability ``p`` (a float or a tensor of probabilities)."""
    if _meta.is_meta(self):  # (nothing drawn on the meta device, as PyTorch)
        return _fill(self, self._value)
    if isinstance(p, Tensor):
        if _empty(self):
            return self
        if self.dtype.is_complex:
            _refuse(self, "bernoulli_tensor_cpu_self_")
        if p.dtype.is_complex:
            _refuse(p, "bernoulli_tensor_cpu_p_")
        keep = _sample.bernoulli_tensor(generator, jnp.broadcast_to(p._value, tuple(self.shape)))
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
        if _empty(self):
            return self
        if self.dtype.is_complex:
            _refuse(self, "bernoulli_scalar_cpu_")
        keep = _sample.bernoulli_scalar(generator, tuple(self.shape), float(p), self.dtype.np)
    return _fill(self, keep if keep.dtype == self.dtype.np else keep.astype(self.dtype.np))


export("bernoulli")(_factories.bernoulli)


@export("multinomial")
def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Category indices drawn from the rows of ``input`` (PyTorch's CPU algorithm)."""
    return _factories.multinomial(input, num_samples, replacement, generator=generator)


def _continuous(self: Tensor, name: str, dtype_name) -> None:
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {dtype_name(self.dtype)}")


@export("exponential_", function=False)
def exponential_(self, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill with Exp(lambd) draws."""
    if _meta.is_meta(self):  # (nothing drawn on the meta device, as PyTorch)
        return _fill(self, self._value)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    if _empty(self):
        return self
    _continuous(self, "Exponential", _scalar_type_name)
    return _fill(self, _sample.exponential(generator, tuple(self.shape), self.dtype.np, float(lambd)))


@export("cauchy_", function=False)
def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill with Cauchy draws: ``median + sigma * tan(pi * (u - 0.5))`` (u: float64 uniforms)."""
    if _meta.is_meta(self):  # (nothing drawn on the meta device, as PyTorch)
        return _fill(self, self._value)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
    _continuous(self, "Cauchy", _dtype_cname)
    u = _sample.uniform(generator, tuple(self.shape), np.float64)
    return _fill(self, _sample.from_double(median + sigma * jnp.tan(math.pi * (u - 0.5)), self.dtype.np))


@export("log_normal_", function=False)
def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill with ``exp(N(mean, std²))`` draws (the scalar normal path, as PyTorch's kernel)."""
    if _meta.is_meta(self):  # (nothing drawn on the meta device, as PyTorch)
        return _fill(self, self._value)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    if _empty(self):
        return self
    _floating(self, "log_normal_cpu")
    g = _sample.generator_or_default(generator)
    n = math.prod(self.shape)
    z = np.asarray(_sample._normal_scalar(g, n, float(mean), float(std)), np.float64)
    return _fill(self, jnp.asarray(_sample.from_double(np.exp(z), self.dtype.np).reshape(tuple(self.shape))))


@export("geometric_", function=False)
def geometric_(self, p: float, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (integer dtypes too)."""
    if _meta.is_meta(self):  # (nothing drawn on the meta device, as PyTorch)
        return _fill(self, self._value)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    if _empty(self):
        return self
    if self.dtype.is_complex or self.dtype.np == np.bool_:
        _refuse(self, "geometric_cpu")
    u = _sample.uniform(generator, tuple(self.shape), np.float64)
    return _fill(self, jnp.ceil(jnp.log(u) / math.log1p(-p)).astype(self.dtype.np))
