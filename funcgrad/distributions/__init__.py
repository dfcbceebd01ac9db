"""``funcgrad.distributions``: PyTorch's ``torch.distributions`` (parameters, ``sample`` /
``rsample``, ``log_prob``, ``entropy``, ``kl_divergence``, transforms and ``biject_to`` /
``transform_to``), written with funcgrad ops so that ``log_prob`` and reparameterised samples carry
gradients through ``backward()``. PyTorch's submodules (``funcgrad.distributions.normal`` ...) are
views of these names (``_submodules``).

>>> import funcgrad
>>> from funcgrad.distributions import Categorical
>>> logits = funcgrad.zeros(3, requires_grad=True)
>>> d = Categorical(logits=logits)
>>> a = funcgrad.tensor(1)
>>> (-(d.log_prob(a) * 2.0)).backward()   # REINFORCE: -log pi(a) * R
>>> logits.grad
tensor([ 0.6667, -1.3333,  0.6667])
"""

import sys as _sys

from . import _kl_more as _kl_more
from . import _submodules as _submodules
from . import constraint_registry as constraint_registry
from . import constraints as constraints
from . import kl as kl
from . import transforms as transforms
from ._continuous import Normal as Normal
from ._continuous import Uniform as Uniform
from ._continuous_more import Chi2 as Chi2
from ._continuous_more import ContinuousBernoulli as ContinuousBernoulli
from ._continuous_more import FisherSnedecor as FisherSnedecor
from ._continuous_more import GeneralizedPareto as GeneralizedPareto
from ._continuous_more import VonMises as VonMises
from ._counts import Multinomial as Multinomial
from ._counts import NegativeBinomial as NegativeBinomial
from ._counts import OneHotCategoricalStraightThrough as OneHotCategoricalStraightThrough
from ._discrete import Bernoulli as Bernoulli
from ._discrete import Categorical as Categorical
from ._discrete import OneHotCategorical as OneHotCategorical
from ._exp_family import ExponentialFamily as ExponentialFamily
from ._gamma import Beta as Beta
from ._gamma import Dirichlet as Dirichlet
from ._gamma import Gamma as Gamma
from ._lowrank import LKJCholesky as LKJCholesky
from ._lowrank import LowRankMultivariateNormal as LowRankMultivariateNormal
from ._lowrank import Wishart as Wishart
from ._mixture import MixtureSameFamily as MixtureSameFamily
from ._more import Cauchy as Cauchy
from ._more import Exponential as Exponential
from ._more import Geometric as Geometric
from ._more import Laplace as Laplace
from ._mvn import Independent as Independent
from ._mvn import MultivariateNormal as MultivariateNormal
from ._nosample import Binomial as Binomial
from ._nosample import Poisson as Poisson
from ._nosample import StudentT as StudentT
from ._transformed import LogNormal as LogNormal
from ._transformed import TransformedDistribution as TransformedDistribution
from ._transformed_more import ExpRelaxedCategorical as _ExpRelaxedCategorical
from ._transformed_more import Gumbel as Gumbel
from ._transformed_more import HalfCauchy as HalfCauchy
from ._transformed_more import HalfNormal as HalfNormal
from ._transformed_more import InverseGamma as InverseGamma
from ._transformed_more import Kumaraswamy as Kumaraswamy
from ._transformed_more import LogisticNormal as LogisticNormal
from ._transformed_more import LogitRelaxedBernoulli as _LogitRelaxedBernoulli
from ._transformed_more import Pareto as Pareto
from ._transformed_more import RelaxedBernoulli as RelaxedBernoulli
from ._transformed_more import RelaxedOneHotCategorical as RelaxedOneHotCategorical
from ._transformed_more import Weibull as Weibull
from .constraint_registry import biject_to as biject_to
from .constraint_registry import transform_to as transform_to
from .distribution import Distribution as Distribution
from .kl import kl_divergence as kl_divergence
from .kl import register_kl as register_kl
from .transforms import AbsTransform as AbsTransform
from .transforms import AffineTransform as AffineTransform
from .transforms import CatTransform as CatTransform
from .transforms import ComposeTransform as ComposeTransform
from .transforms import CorrCholeskyTransform as CorrCholeskyTransform
from .transforms import CumulativeDistributionTransform as CumulativeDistributionTransform
from .transforms import ExpTransform as ExpTransform
from .transforms import IndependentTransform as IndependentTransform
from .transforms import LowerCholeskyTransform as LowerCholeskyTransform
from .transforms import PositiveDefiniteTransform as PositiveDefiniteTransform
from .transforms import PowerTransform as PowerTransform
from .transforms import ReshapeTransform as ReshapeTransform
from .transforms import SigmoidTransform as SigmoidTransform
from .transforms import SoftmaxTransform as SoftmaxTransform
from .transforms import SoftplusTransform as SoftplusTransform
from .transforms import StackTransform as StackTransform
from .transforms import StickBreakingTransform as StickBreakingTransform
from .transforms import TanhTransform as TanhTransform
from .transforms import Transform as Transform
from .transforms import identity_transform as identity_transform

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform", "Categorical",
    "Cauchy", "Chi2", "ComposeTransform", "ContinuousBernoulli", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "Dirichlet", "Distribution", "ExpTransform", "Exponential",
    "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy",
    "HalfNormal", "Independent", "IndependentTransform", "InverseGamma", "Kumaraswamy", "LKJCholesky",
    "Laplace", "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "LowerCholeskyTransform",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PositiveDefiniteTransform",
    "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform",
    "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform", "StudentT",
    "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart",
    "biject_to", "identity_transform", "kl_divergence", "register_kl", "transform_to",
]

_submodules.install(_sys.modules[__name__], {**globals(), "ExpRelaxedCategorical": _ExpRelaxedCategorical,
                                            "LogitRelaxedBernoulli": _LogitRelaxedBernoulli})
