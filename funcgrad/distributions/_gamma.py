"""``Gamma``, ``Dirichlet`` and ``Beta``, with reparameterised samples.

``_standard_gamma(alpha)`` draws with ``jax.random.gamma`` and records one op whose derivative
is the implicit reparameterisation gradient ``d sample / d alpha`` (``lax.random_gamma_grad``,
the same quantity as PyTorch's ``_standard_gamma_grad``), so ``Gamma.rsample`` gives PyTorch's
per-sample gradient for a given sample. Dirichlet (and Beta, a two-component Dirichlet) samples
normalised gammas, so its gradients flow through that op: their expectation is PyTorch's, but
per sample they differ from PyTorch's ``_dirichlet_grad`` (a different reparameterisation).
"""

from __future__ import annotations

import numbers

import jax
import numpy as np
from jax import lax

from .. import _random
from .._dispatch import apply
from .._factories import tensor as _tensor
from .._ops._registry import defop
from .._ops.math import digamma, lgamma, xlogy
from .._ops.shape import stack
from .._tensor import Size, Tensor
from . import constraints
from ._exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma", "Dirichlet", "Beta", "standard_gamma"]


def _gamma_reparam(alpha, x):
    # forward: the sample x itself; derivative wrt alpha: the implicit gradient at x
    g = lax.stop_gradient(lax.random_gamma_grad(alpha, x))
    return x + (alpha - lax.stop_gradient(alpha)) * g


_STANDARD_GAMMA = defop("standard_gamma", _gamma_reparam, "StandardGammaBackward0", diff=(0,))


@jax.jit
def _draw(key, alpha):
    return jax.random.gamma(key, alpha, dtype=alpha.dtype)


def standard_gamma(concentration: Tensor, generator=None) -> Tensor:
    """Gamma(concentration, 1) samples (``torch._standard_gamma``), differentiable in the
    concentration by implicit reparameterisation.

    >>> import funcgrad
    >>> a = funcgrad.tensor([2.0, 3.0], requires_grad=True)
    >>> standard_gamma(a).grad_fn.name()
    'StandardGammaBackward0'
    """
    x = _draw(_random.next_key(generator), concentration._value)
    return apply(_STANDARD_GAMMA, concentration, x)


def _tiny(dt) -> float:
    return float(np.finfo(dt.np).tiny)


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and inverse scale ``rate``.

    >>> import funcgrad
    >>> from funcgrad.distributions import Gamma
    >>> Gamma(2.0, 1.0).log_prob(funcgrad.tensor(1.0))
    tensor(-1.)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number):
            batch_shape = Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=_tiny(value.dtype))  # not recorded in the graph, as PyTorch's
        return value

    def log_prob(self, value):
        if not isinstance(value, Tensor):
            value = _tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + lgamma(c) + (1.0 - c) * digamma(c)


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex of the last dim of ``concentration``.

    >>> import funcgrad
    >>> from funcgrad.distributions import Dirichlet
    >>> Dirichlet(funcgrad.tensor([1.0, 1.0, 1.0])).log_prob(funcgrad.tensor([0.2, 0.3, 0.5]))
    tensor(0.6931)
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        g = standard_gamma(self.concentration.expand(shape))
        g.detach().clamp_(min=_tiny(g.dtype))
        return g / g.sum(-1, True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        a0 = c.sum(-1)
        return (lgamma(c).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0)
                - ((c - 1.0) * digamma(c)).sum(-1))


class Beta(ExponentialFamily):
    """Beta distribution on ``[0, 1]`` (``concentration1`` = α, ``concentration0`` = β).

    >>> import funcgrad
    >>> from funcgrad.distributions import Beta
    >>> Beta(2.0, 2.0).mean
    tensor(0.5000)
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None) -> None:
        if isinstance(concentration1, numbers.Number) and isinstance(concentration0, numbers.Number):
            both = _tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = Size(tuple(batch_shape))
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]
