"""``Multinomial``, ``NegativeBinomial`` and ``OneHotCategoricalStraightThrough``, PyTorch's formulas.

``Multinomial.sample`` and ``OneHotCategoricalStraightThrough`` draw through ``Categorical.sample``
(PyTorch's ``multinomial`` on the mt19937 stream), so a seed gives PyTorch's counts.
``NegativeBinomial`` does not sample: PyTorch draws it as ``poisson(Gamma(...).sample())`` and its
gamma kernel is not reproduced (as ``StudentT``, see ``_nosample``).
"""

from __future__ import annotations

import math

from .._factories import ones_like as _ones_like
from .._factories import tensor as _tensor
from .._ops.math import lgamma
from .._tensor import Size
from ..nn.functional import logsigmoid
from . import constraints
from ._discrete import Categorical, OneHotCategorical
from ._nosample import Binomial, _no_sampling
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Multinomial", "NegativeBinomial", "OneHotCategoricalStraightThrough"]


class Multinomial(Distribution):
    """Counts of ``total_count`` draws from ``Categorical(probs / logits)``.

    >>> import funcgrad
    >>> from funcgrad.distributions import Multinomial
    >>> Multinomial(4, probs=funcgrad.tensor([0.25, 0.75])).mean
    tensor([1., 3.])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        sample_shape = Size(tuple(sample_shape))
        samples = self._categorical.sample(Size((self.total_count,)) + sample_shape)
        shifted_idx = list(range(samples.dim()))
        shifted_idx.append(shifted_idx.pop(0))
        samples = samples.permute(*shifted_idx)
        counts = samples.new_zeros(tuple(self._extended_shape(sample_shape)))
        counts.scatter_add_(-1, samples, _ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        n = _tensor(self.total_count)
        cat_entropy = self._categorical.entropy()
        term1 = n * cat_entropy - lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone()
        log_factorial_n = lgamma(value.sum(-1) + 1)
        log_factorial_xs = lgamma(value + 1).sum(-1)
        logits[(value == 0) & (logits == -math.inf)] = 0
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers


class NegativeBinomial(Distribution):
    """Number of successes before ``total_count`` failures, success probability ``probs``
    (no sampling, see the module).

    >>> import funcgrad
    >>> from funcgrad.distributions import NegativeBinomial
    >>> NegativeBinomial(3.0, probs=funcgrad.tensor(0.5)).mean
    tensor(3.)
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = Size(tuple(batch_shape))
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    sample = _no_sampling("NegativeBinomial", "torch.poisson of Gamma samples (_standard_gamma)")

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = (-lgamma(self.total_count + value) + lgamma(1.0 + value)
                             + lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` whose ``rsample`` passes the gradient of ``probs`` straight through
    the one-hot sample (Bengio et al., 2013).

    >>> import funcgrad
    >>> from funcgrad.distributions import OneHotCategoricalStraightThrough
    >>> OneHotCategoricalStraightThrough(logits=funcgrad.zeros(3)).has_rsample
    True
    """

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
