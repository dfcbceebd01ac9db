"""PyTorch's per-distribution submodules (``torch.distributions.normal``, ``.half_normal``, ...) as
views of this package's names, so ``from funcgrad.distributions.normal import Normal`` works as in
PyTorch. One table, ``SUBMODULES`` (submodule -> its ``__all__``, PyTorch 2.13's), gives them all;
``constraints``, ``constraint_registry``, ``distribution``, ``kl``, ``transforms`` and ``utils`` are
real modules of the package and are not listed."""

from __future__ import annotations

import sys
import types

__all__ = ["SUBMODULES", "install"]

SUBMODULES = {
    "bernoulli": ["Bernoulli"], "beta": ["Beta"], "binomial": ["Binomial"], "categorical": ["Categorical"],
    "cauchy": ["Cauchy"], "chi2": ["Chi2"], "continuous_bernoulli": ["ContinuousBernoulli"],
    "dirichlet": ["Dirichlet"], "exp_family": ["ExponentialFamily"], "exponential": ["Exponential"],
    "fishersnedecor": ["FisherSnedecor"], "gamma": ["Gamma"], "generalized_pareto": ["GeneralizedPareto"],
    "geometric": ["Geometric"], "gumbel": ["Gumbel"], "half_cauchy": ["HalfCauchy"],
    "half_normal": ["HalfNormal"], "independent": ["Independent"], "inverse_gamma": ["InverseGamma"],
    "kumaraswamy": ["Kumaraswamy"], "laplace": ["Laplace"], "lkj_cholesky": ["LKJCholesky"],
    "log_normal": ["LogNormal"], "logistic_normal": ["LogisticNormal"],
    "lowrank_multivariate_normal": ["LowRankMultivariateNormal"],
    "mixture_same_family": ["MixtureSameFamily"], "multinomial": ["Multinomial"],
    "multivariate_normal": ["MultivariateNormal"], "negative_binomial": ["NegativeBinomial"],
    "normal": ["Normal"], "one_hot_categorical": ["OneHotCategorical", "OneHotCategoricalStraightThrough"],
    "pareto": ["Pareto"], "poisson": ["Poisson"],
    "relaxed_bernoulli": ["LogitRelaxedBernoulli", "RelaxedBernoulli"],
    "relaxed_categorical": ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"], "studentT": ["StudentT"],
    "transformed_distribution": ["TransformedDistribution"], "uniform": ["Uniform"],
    "von_mises": ["VonMises"],
    "weibull": ["Weibull"], "wishart": ["Wishart"],
}


def install(package: types.ModuleType, names: dict) -> None:
    """Create each submodule of ``SUBMODULES`` under ``package`` from ``names`` (name -> object),
    register it in ``sys.modules`` and as the package's attribute, and name it as the module of the
    classes defined in a private module (``Normal.__module__`` is ``...distributions.normal``, as
    in PyTorch; the defining module's ``__test__`` keeps their doctests collected)."""
    for sub, exported in SUBMODULES.items():
        full = f"{package.__name__}.{sub}"
        mod = types.ModuleType(full, f"PyTorch's ``torch.distributions.{sub}``: {', '.join(exported)}.")
        mod.__all__ = list(exported)
        mod.__package__ = package.__name__
        for name in exported:
            obj = names[name]
            if isinstance(obj, type) and obj.__module__.startswith(f"{package.__name__}._"):
                # doctest collects a module's classes by __module__: list it where it is defined
                vars(sys.modules[obj.__module__]).setdefault("__test__", {})[name] = obj
                obj.__module__ = full  # PyTorch's class path (reprs, messages, pickles name it)
            setattr(mod, name, obj)
        sys.modules[full] = mod
        setattr(package, sub, mod)
