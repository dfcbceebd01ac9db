"""Spec row for the reparameterised gamma op (funcgrad/distributions/_gamma.py): its forward is
the given sample and its derivative the implicit gradient ``d sample / d alpha``; the reference
differentiates the Gamma CDF implicitly, ``-dF/dalpha / pdf``, by finite differences in float64."""

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp

from funcgrad.distributions._gamma import _STANDARD_GAMMA
from funcgrad._dispatch import apply

from . import Spec, pos


def _implicit(a, x):
    # x(a) defined by gammainc(a, x) = u held fixed: dx/da = -(dF/da) / (dF/dx)
    h = 1e-6
    dfa = (jsp.gammainc(a + h, x) - jsp.gammainc(a - h, x)) / (2 * h)
    pdf = jnp.exp((a - 1) * jnp.log(x) - x - jsp.gammaln(a))
    dx = jax.lax.stop_gradient(-dfa / pdf)
    return x + (a - jax.lax.stop_gradient(a)) * dx


SPECS = [
    Spec("standard_gamma", lambda a, x: apply(_STANDARD_GAMMA, a, x), _implicit,
         [pos(3, 4, low=0.5, high=3.0), pos(3, 4, low=0.3, high=3.0)], grad=(0,),
         grad_fn="StandardGammaBackward0", rtol=1e-5, atol=1e-7),
]
