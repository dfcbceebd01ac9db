"""``ExponentialFamily``: PyTorch's base of the exponential-family distributions (``Normal``,
``Gamma``, ``Beta``, ``Dirichlet``, ``Bernoulli``, ``Exponential``, ``Poisson``, ``Chi2``,
``ContinuousBernoulli``, ``Wishart``), whose entropy and same-family KL divergence follow from
the log normaliser by autograd (the Bregman divergence)."""

from __future__ import annotations

from ..autograd import grad as _grad
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base of exponential-family distributions ``p(x) = h(x) exp(<t(x), theta> - F(theta))``:
    a subclass gives ``_natural_params``, ``_log_normalizer`` and ``_mean_carrier_measure``, and
    ``entropy`` is computed from them by autograd."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = _grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for p, g in zip(nparams, gradients, strict=True):
            result -= (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
