"""Spec rows for the elementwise math ops (funcgrad/_ops/math.py)."""

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np

import funcgrad as fg

from . import Spec, ints, pos, unit

S = (3, 4)


def _special(rng):
    return np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0, 3.0])


SPECS = [
    Spec("exp2", fg.exp2, jnp.exp2, [S], grad_fn="Exp2Backward0"),
    Spec("expm1", lambda x: x.expm1(), jnp.expm1, [S], grad_fn="Expm1Backward0"),
    Spec("log2", fg.log2, jnp.log2, [pos(*S)], grad_fn="Log2Backward0"),
    Spec("log10", lambda x: x.log10(), jnp.log10, [pos(*S)], grad_fn="Log10Backward0"),
    Spec("log1p", fg.log1p, jnp.log1p, [pos(*S)], grad_fn="Log1PBackward0"),
    Spec("rsqrt", fg.rsqrt, jax.lax.rsqrt, [pos(*S)], grad_fn="RsqrtBackward0"),
    Spec("reciprocal", lambda x: x.reciprocal(), jnp.reciprocal, [pos(*S)], grad_fn="ReciprocalBackward0"),
    Spec("square", fg.square, jnp.square, [S], grad_fn="PowBackward0"),
    Spec("square", fg.square, jnp.square, [ints(5, low=-3)], nondiff=True, id="square_int"),
    Spec("sign", fg.sign, jnp.sign, [S], grad_fn="SignBackward0"),
    Spec("sgn", lambda x: x.sgn(), jnp.sign, [S], grad_fn="SgnBackward0"),
    Spec("floor", fg.floor, jnp.floor, [S], grad_fn="FloorBackward0"),
    Spec("floor", fg.floor, lambda x: x, [ints(5)], nondiff=True, id="floor_int"),
    Spec("ceil", lambda x: x.ceil(), jnp.ceil, [S], grad_fn="CeilBackward0"),
    Spec("trunc", fg.trunc, jnp.trunc, [S], grad_fn="TruncBackward0"),
    Spec("trunc", fg.fix, jnp.trunc, [S], id="fix"),
    Spec("frac", fg.frac, lambda x: x - jnp.trunc(x), [S], grad_fn="FracBackward0"),
    Spec("round", fg.round, jnp.round, [S], grad_fn="RoundBackward0"),
    Spec("round_decimals", lambda x: fg.round(x, decimals=2), lambda x: jnp.round(x * 100) / 100, [S],
         grad_fn="RoundBackward1"),
    Spec("round_decimals", lambda x: x.round(decimals=-1), lambda x: jnp.round(x / 10) * 10,
         [lambda rng: rng.uniform(-100, 100, (6,))], id="round_neg_decimals"),
    Spec("tan", fg.tan, jnp.tan, [unit(*S)], grad_fn="TanBackward0"),
    Spec("asin", fg.asin, jnp.arcsin, [unit(*S)], grad_fn="AsinBackward0"),
    Spec("asin", fg.arcsin, jnp.arcsin, [unit(*S)], id="arcsin"),
    Spec("acos", lambda x: x.acos(), jnp.arccos, [unit(*S)], grad_fn="AcosBackward0"),
    Spec("atan", fg.arctan, jnp.arctan, [S], grad_fn="AtanBackward0"),
    Spec("sinh", fg.sinh, jnp.sinh, [S], grad_fn="SinhBackward0"),
    Spec("cosh", fg.cosh, jnp.cosh, [S], grad_fn="CoshBackward0"),
    Spec("asinh", fg.asinh, jnp.arcsinh, [S], grad_fn="AsinhBackward0"),
    Spec("acosh", fg.acosh, jnp.arccosh, [pos(*S, low=1.2, high=3.0)], grad_fn="AcoshBackward0"),
    Spec("atanh", lambda x: x.arctanh(), jnp.arctanh, [unit(*S)], grad_fn="AtanhBackward0"),
    # the in-place forms: PyTorch has no derivative (tests/test_engine_needed_inputs.py)
    Spec("asinh_", lambda x: x.asinh_(), jnp.arcsinh, [S], nondiff=True),
    Spec("acosh_", lambda x: fg.arccosh_(x), jnp.arccosh, [pos(*S, low=1.2, high=3.0)], nondiff=True),
    Spec("atanh_", lambda x: x.atanh_(), jnp.arctanh, [unit(*S)], nondiff=True),
    Spec("erf", fg.erf, jsp.erf, [S], grad_fn="ErfBackward0"),
    Spec("erfc", fg.erfc, jsp.erfc, [S], grad_fn="ErfcBackward0"),
    Spec("erfinv", fg.erfinv, jsp.erfinv, [unit(*S)], grad_fn="ErfinvBackward0", rtol=1e-6),
    Spec("lgamma", fg.lgamma, jax.lax.lgamma, [pos(*S)], grad_fn="LgammaBackward0"),
    Spec("digamma", fg.digamma, jax.lax.digamma, [pos(*S)], grad_fn="DigammaBackward0"),
    Spec("deg2rad", fg.deg2rad, jnp.deg2rad, [S], grad_fn="Deg2RadBackward0"),
    Spec("rad2deg", lambda x: x.rad2deg(), jnp.rad2deg, [S], grad_fn="Rad2DegBackward0"),
    Spec("sinc", fg.sinc, jnp.sinc, [S], grad_fn="SincBackward0"),
    Spec("sinc", fg.sinc, jnp.sinc, [np.array([0.0, 1.0, -0.5])], id="sinc_at_0"),
    # predicates and logic: bool results, never differentiable
    Spec("isnan", fg.isnan, jnp.isnan, [_special], nondiff=True),
    Spec("isinf", lambda x: x.isinf(), jnp.isinf, [_special], nondiff=True),
    Spec("isfinite", fg.isfinite, jnp.isfinite, [_special], nondiff=True),
    Spec("isposinf", fg.isposinf, jnp.isposinf, [_special], nondiff=True),
    Spec("isneginf", fg.isneginf, jnp.isneginf, [_special], nondiff=True),
    Spec("signbit", fg.signbit, jnp.signbit, [_special], nondiff=True),
    Spec("isreal", fg.isreal, jnp.isreal, [S], nondiff=True),
    Spec("logical_not", fg.logical_not, jnp.logical_not, [ints(6)], nondiff=True),
    Spec("logical_and", fg.logical_and, jnp.logical_and, [ints(6), ints(6)], nondiff=True),
    Spec("logical_or", lambda x, y: x.logical_or(y), jnp.logical_or, [ints(6), ints(6)], nondiff=True),
    Spec("logical_xor", fg.logical_xor, jnp.logical_xor, [S, ints(3, 4)], nondiff=True),
    Spec("isclose", lambda x, y: fg.isclose(x, x + y * 1e-6), lambda x, y: jnp.isclose(x, x + y * 1e-6,
         rtol=1e-5, atol=1e-8), [S, S], nondiff=True),
    # binary math
    Spec("atan2", fg.atan2, jnp.arctan2, [S, S], grad_fn="Atan2Backward0"),
    Spec("atan2", lambda x, y: x.arctan2(y), jnp.arctan2, [S, (4,)], id="arctan2_broadcast"),
    Spec("hypot", fg.hypot, jnp.hypot, [S, S], grad_fn="HypotBackward0"),
    Spec("fmod", lambda x: fg.fmod(x, 0.7), lambda x: jnp.fmod(x, 0.7), [S], grad_fn="FmodBackward0"),
    Spec("fmod_tensor", fg.fmod, jnp.fmod, [S, pos(*S)], grad_fn="FmodBackward1"),
    Spec("fmod", lambda x: fg.fmod(x, 3), lambda x: jnp.fmod(x, 3), [ints(5, low=-9, high=9)], nondiff=True,
         id="fmod_int"),
    Spec("logaddexp", fg.logaddexp, jnp.logaddexp, [S, S], grad_fn="LogaddexpBackward0"),
    Spec("logaddexp2", fg.logaddexp2, jnp.logaddexp2, [S, (4,)], grad_fn="Logaddexp2Backward0"),
    Spec("xlogy", fg.xlogy, jsp.xlogy, [S, pos(*S)], grad_fn="XlogyBackward0"),
    Spec("xlogy_scalar_other", lambda x: fg.xlogy(x, 2.5), lambda x: jsp.xlogy(x, 2.5), [S],
         grad_fn="XlogyBackward2"),
    Spec("xlogy_scalar_self", lambda y: fg.xlogy(2.0, y), lambda y: jsp.xlogy(2.0, y), [pos(*S)],
         grad_fn="XlogyBackward1"),
    Spec("copysign", fg.copysign, jnp.copysign, [S, S], grad_fn="CopysignBackward0"),
    Spec("copysign_scalar", lambda x: x.copysign(-1.0), lambda x: jnp.copysign(x, -1.0), [S],
         grad_fn="CopysignBackward1"),
    Spec("heaviside", fg.heaviside, jnp.heaviside, [np.array([-1.0, 0.0, 2.0]), np.array([0.5, 0.5, 0.5])],
         nondiff=True),
    Spec("clamp_min_tensor", fg.clamp_min, lambda x, lo: jnp.where(x >= lo, x, lo), [S, S],
         grad_fn="ClampMinBackward1"),
    Spec("clamp_max_tensor", lambda x, hi: x.clamp_max(hi), lambda x, hi: jnp.where(x <= hi, x, hi), [S, (4,)],
         grad_fn="ClampMaxBackward1"),
    Spec("clamp_min", lambda x: fg.clamp_min(x, 0.2), lambda x: jnp.maximum(x, 0.2), [S],
         grad_fn="ClampMinBackward0", id="clamp_min_fn"),
    Spec("clamp_max", lambda x: x.clamp_max(0.2), lambda x: jnp.minimum(x, 0.2), [S],
         grad_fn="ClampMaxBackward0", id="clamp_max_fn"),
    # ternary
    Spec("lerp", lambda s, e: fg.lerp(s, e, 0.3), lambda s, e: s + 0.3 * (e - s), [S, S], grad_fn="LerpBackward0"),
    Spec("lerp", lambda s, e: s.lerp(e, 0.8), lambda s, e: s + 0.8 * (e - s), [S, (4,)], id="lerp_high_weight"),
    Spec("lerp_tensor", fg.lerp, lambda s, e, w: s + w * (e - s), [S, S, S], grad_fn="LerpBackward1"),
    Spec("addcmul", lambda x, a, b: fg.addcmul(x, a, b, value=0.5), lambda x, a, b: x + 0.5 * a * b,
         [S, S, (4,)], grad_fn="AddcmulBackward0"),
    Spec("addcdiv", lambda x, a, b: x.addcdiv(a, b, value=2), lambda x, a, b: x + 2 * a / b,
         [S, S, pos(*S)], grad_fn="AddcdivBackward0"),
    Spec("nan_to_num", fg.nan_to_num, jnp.nan_to_num, [S], grad_fn="NanToNumBackward0"),
    Spec("nan_to_num", lambda x: x.nan_to_num(1.0, 2.0, -3.0), lambda x: jnp.nan_to_num(x, nan=1.0, posinf=2.0,
         neginf=-3.0), [_special], nondiff=True, id="nan_to_num_special"),
]
