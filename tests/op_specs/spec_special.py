"""Spec rows for the special-function ops (funcgrad/_ops/special.py) and scatter_reduce grads."""

import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np

import funcgrad as fg

from . import Spec, pos

S = (3, 4)


def _prob(rng):
    return rng.uniform(0.1, 0.9, S)


_IDX = np.array([[0, 1, 0, 2, 0], [1, 1, 3, 3, 1], [2, 0, 2, 0, 2]])


def _sr(reduce, include_self):
    def fgf(x, s):
        return fg.scatter_reduce(x, 1, fg.tensor(_IDX), s, reduce, include_self=include_self)

    def ref(x, s):
        g = (jnp.arange(3)[:, None], jnp.asarray(_IDX))
        if reduce == "prod":
            base = x if include_self else x.at[g].set(1)
            return base.at[g].multiply(s)
        base = x if include_self else x.at[g].set(-jnp.inf)
        return base.at[g].max(s)
    return fgf, ref


def _sr_prod_ref(x, s):
    # the reference scatter-multiply written as an explicit product (differentiable in JAX)
    out = x
    for r in range(3):
        for c in range(5):
            out = out.at[r, _IDX[r, c]].multiply(s[r, c])
    return out


SPECS = [
    Spec("logit", fg.logit, lambda x: jnp.log(x / (1 - x)), [_prob], grad_fn="LogitBackward0"),
    Spec("logit", lambda x: x.logit(eps=0.2), lambda x: jsp.logit(jnp.clip(x, 0.2, 0.8)),
         [lambda rng: np.array([0.05, 0.3, 0.5, 0.95])], id="logit_eps"),
    Spec("polygamma", lambda x: fg.polygamma(2, x), lambda x: jsp.polygamma(2, x), [pos(*S)],
         grad_fn="PolygammaBackward0", rtol=1e-6),
    Spec("mvlgamma", lambda x: x.mvlgamma(3), lambda x: jsp.multigammaln(x, 3), [pos(*S, low=1.5, high=3)],
         grad_fn="MvlgammaBackward0"),
    Spec("i0", fg.i0, jsp.i0, [S], grad_fn="I0Backward0"),
    Spec("special_i0e", fg.special.i0e, jsp.i0e, [S], grad_fn="SpecialI0EBackward0"),
    Spec("special_i1", fg.special.i1, jsp.i1, [S], grad_fn="SpecialI1Backward0"),
    Spec("special_i1e", fg.special.i1e, jsp.i1e, [S], grad_fn="SpecialI1EBackward0"),
    Spec("special_ndtr", fg.special.ndtr, jsp.ndtr, [S], grad_fn="MulBackward1"),
    Spec("special_ndtri", fg.special.ndtri, jsp.ndtri, [_prob], grad_fn="SpecialNdtriBackward0",
         rtol=1e-6),
    Spec("special_log_ndtr", fg.special.log_ndtr, jsp.log_ndtr, [S], grad_fn="SpecialLogNdtrBackward0"),
    Spec("special_erfcx", fg.special.erfcx, jsp.erfcx, [S], grad_fn="SpecialErfcxBackward0"),
    Spec("special_entr", fg.special.entr, jsp.entr, [pos(*S)], grad_fn="SpecialEntrBackward0"),
    Spec("special_xlog1py", fg.special.xlog1py, jsp.xlog1py, [S, pos(*S)],
         grad_fn="SpecialXlog1PyBackward0"),
    Spec("special_xlog1py_self_scalar", lambda y: fg.special.xlog1py(2.0, y),
         lambda y: jsp.xlog1py(2.0, y), [pos(*S)], grad_fn="SpecialXlog1PyBackward1"),
    Spec("special_xlog1py_other_scalar", lambda x: fg.special.xlog1py(x, 1.5),
         lambda x: jsp.xlog1py(x, 1.5), [S], grad_fn="SpecialXlog1PyBackward2"),
    Spec("special_zeta", fg.special.zeta, jsp.zeta, [pos(*S, low=2, high=4), pos(*S)], grad=(1,),
         grad_fn="SpecialZetaBackward0", rtol=1e-6),
    Spec("special_zeta_self_scalar", lambda q: fg.special.zeta(3.0, q), lambda q: jsp.zeta(3.0, q),
         [pos(*S)], grad_fn="SpecialZetaBackward1", rtol=1e-6),
    Spec("special_zeta_other_scalar", lambda x: fg.special.zeta(x, 2.0), lambda x: jsp.zeta(x, 2.0),
         [pos(*S, low=2, high=4)], nondiff=True),
    # derivatives.yaml: igamma/igammac differentiable in other only (self's derivative raises)
    Spec("igamma", fg.igamma, jsp.gammainc, [pos(*S), pos(*S)], grad=(1,), grad_fn="IgammaBackward0"),
    Spec("igammac", lambda a, x: a.igammac(x), jsp.gammaincc, [pos(*S), pos(*S)], grad=(1,),
         grad_fn="IgammacBackward0"),
    Spec("frexp", lambda x: fg.frexp(x).mantissa, lambda x: jnp.frexp(x)[0], [S],
         grad_fn="FrexpBackward0"),
    Spec("ldexp", fg.ldexp, lambda x, e: x * jnp.exp2(e), [S, S], grad_fn="LdexpBackward0"),
    Spec("scatter_reduce", _sr("amax", False)[0], _sr("amax", False)[1], [(3, 4), (3, 5)],
         grad_fn="ScatterReduceBackward0", id="scatter_reduce_amax_noself"),
    Spec("scatter_reduce", _sr("prod", True)[0], _sr_prod_ref, [(3, 4), (3, 5)],
         grad_fn="ScatterReduceBackward0", id="scatter_reduce_prod"),
]
