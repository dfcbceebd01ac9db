"""``funcgrad.distributions``: PyTorch's ``torch.distributions`` (parameters, ``sample`` /
``rsample``, ``log_prob``, ``entropy``, ``kl_divergence``), written with funcgrad ops so that
``log_prob`` and reparameterised samples carry gradients through ``backward()``.

>>> import funcgrad
>>> from funcgrad.distributions import Categorical
>>> logits = funcgrad.zeros(3, requires_grad=True)
>>> d = Categorical(logits=logits)
>>> a = funcgrad.tensor(1)
>>> (-(d.log_prob(a) * 2.0)).backward()   # REINFORCE: -log pi(a) * R
>>> logits.grad
tensor([ 0.6667, -1.3333,  0.6667])
"""

from . import constraints as constraints
from ._continuous import Normal as Normal, Uniform as Uniform
from ._discrete import Bernoulli as Bernoulli, Categorical as Categorical
from ._discrete import OneHotCategorical as OneHotCategorical
from ._gamma import Beta as Beta, Dirichlet as Dirichlet, Gamma as Gamma
from ._mvn import Independent as Independent, MultivariateNormal as MultivariateNormal
from .distribution import Distribution as Distribution
from .kl import kl_divergence as kl_divergence, register_kl as register_kl

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Gamma", "Independent",
           "MultivariateNormal", "Normal", "OneHotCategorical", "Uniform", "constraints",
           "kl_divergence", "register_kl"]
from ._more import Cauchy as Cauchy, Exponential as Exponential, Geometric as Geometric  # noqa: E402
from ._more import Laplace as Laplace  # noqa: E402
__all__ += ["Cauchy", "Exponential", "Geometric", "Laplace"]
from . import transforms as transforms  # noqa: E402
from ._transformed import LogNormal as LogNormal, TransformedDistribution as TransformedDistribution  # noqa: E402
__all__ += ["LogNormal", "TransformedDistribution", "transforms"]
from ._mixture import MixtureSameFamily as MixtureSameFamily  # noqa: E402
__all__ += ["MixtureSameFamily"]
from ._nosample import Binomial as Binomial, Poisson as Poisson, StudentT as StudentT  # noqa: E402
__all__ += ["Binomial", "Poisson", "StudentT"]
