"""Op table — more elementwise math: exp/log family, rounding, trigonometric and hyperbolic
functions, special functions, binary math (atan2, hypot, fmod, xlogy…), ternary ops (lerp,
addcmul, addcdiv), predicates (isnan, isclose…) and logical ops.

Each op carries PyTorch's node name; rounding and sign-like ops are recorded with a zero gradient
(``FloorBackward0``…) as PyTorch does. Integer inputs become the default float dtype for
transcendental functions (``promote="float"``) and stay integers for rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp

from .._factories import tensor
from .._tensor import _scalar_type_name
from ._registry import (
    FUNCTIONS,
    NotImplementedGrad,
    Tensor,
    any_dtype,
    apply,
    defop,
    export,
    inplace_method,
    noargs_method,
)
from ._registry import write_out as _out
from .pointwise import _clamp_max_s, _clamp_min_s, _make_unary, int_division, scalar_bounds_dtype


def _tensor(x):
    if isinstance(x, Tensor):
        return x
    return tensor(x)


def _is_int(x) -> bool:
    return jnp.issubdtype(x.dtype, jnp.integer) or x.dtype == jnp.bool_


def _keep_int(f):
    """Rounding functions are the identity on integer (and bool) tensors, as in PyTorch."""
    return lambda x: x if _is_int(x) else f(x)


def _sign(x):
    if x.dtype == jnp.bool_:
        return x
    # PyTorch's (0 < x) - (x < 0): 0 at nan
    return jnp.where(jnp.isnan(x), jnp.zeros((), x.dtype), jnp.sign(x)) if jnp.issubdtype(
        x.dtype, jnp.floating) else jnp.sign(x)


def _sgn(x):
    # complex: x / |x| (0 at 0); real: sign
    return _sign(x) if not jnp.iscomplexobj(x) else jnp.sign(x)


# ================================ unary ==========================================================
# (name, jnp fn, PyTorch node name, promote, aliases)
_UNARY = [
    ("exp2", jnp.exp2, "Exp2Backward0", "float", ()),
    ("expm1", jnp.expm1, "Expm1Backward0", "float", ("special_expm1",)),
    ("log2", jnp.log2, "Log2Backward0", "float", ()),
    ("log10", jnp.log10, "Log10Backward0", "float", ()),
    ("log1p", jnp.log1p, "Log1PBackward0", "float", ()),
    ("rsqrt", jax.lax.rsqrt, "RsqrtBackward0", "float", ()),
    ("reciprocal", jnp.reciprocal, "ReciprocalBackward0", "float", ()),
    # bool squares to int64, as PyTorch (jnp.square gives int32)
    ("square", lambda x: jnp.square(x.astype(jnp.int64) if x.dtype == jnp.bool_ else x), "PowBackward0",
     "none", ()),
    ("sign", _sign, "SignBackward0", "none", ()),
    ("sgn", _sgn, "SgnBackward0", "none", ()),
    ("floor", _keep_int(jnp.floor), "FloorBackward0", "none", ()),
    ("ceil", _keep_int(jnp.ceil), "CeilBackward0", "none", ()),
    ("trunc", _keep_int(jnp.trunc), "TruncBackward0", "none", ("fix",)),
    ("frac", lambda x: x - jnp.trunc(x), "FracBackward0", "none", ()),
    ("tan", jnp.tan, "TanBackward0", "float", ()),
    ("asin", jnp.arcsin, "AsinBackward0", "float", ("arcsin",)),
    ("acos", jnp.arccos, "AcosBackward0", "float", ("arccos",)),
    ("atan", jnp.arctan, "AtanBackward0", "float", ("arctan",)),
    ("sinh", jnp.sinh, "SinhBackward0", "float", ()),
    ("cosh", jnp.cosh, "CoshBackward0", "float", ()),
    ("asinh", jnp.arcsinh, "AsinhBackward0", "float", ("arcsinh",)),
    ("acosh", jnp.arccosh, "AcoshBackward0", "float", ("arccosh",)),
    ("atanh", jnp.arctanh, "AtanhBackward0", "float", ("arctanh",)),
    ("erf", jsp.erf, "ErfBackward0", "float", ()),
    ("erfc", jsp.erfc, "ErfcBackward0", "float", ()),
    ("erfinv", jsp.erfinv, "ErfinvBackward0", "float", ()),
    ("lgamma", jax.lax.lgamma, "LgammaBackward0", "float", ()),
    ("digamma", lambda x: _digamma(x), "DigammaBackward0", "float", ("psi",)),
    ("deg2rad", jnp.deg2rad, "Deg2RadBackward0", "float", ()),
    ("rad2deg", jnp.rad2deg, "Rad2DegBackward0", "float", ()),
    # normalised sinc, sin(pi x) / (pi x); jnp.sinc's derivative at 0 is 0, as PyTorch's
    ("sinc", jnp.sinc, "SincBackward0", "float", ()),
]
MATH_OPS = {}


def _rounding(name, kernel):
    # integers pass through; bool has no kernel, complex its own message
    return dict(accepts="if", kernel=kernel, errors={
        "c": (NotImplementedError, f"{name} is not supported for complex inputs")})


# the dtypes PyTorch's kernels take (``defop``'s accepts / kernel / errors)
_DTYPES = {
    "floor": _rounding("floor", "floor_vml_cpu"), "ceil": _rounding("ceil", "ceil_vml_cpu"),
    "trunc": _rounding("trunc", "trunc_vml_cpu"), "frac": dict(accepts="f", kernel="frac_cpu"),
}


@jax.custom_jvp
def _digamma(x):
    # PyTorch's calc_digamma: copysign(inf, -x) at ±0 (jax: nan)
    return jnp.where(x == 0, jnp.copysign(jnp.asarray(jnp.inf, x.dtype), -x), jax.lax.digamma(x))


@_digamma.defjvp
def _digamma_jvp(primals, tangents):
    # lgamma's second derivative: PyTorch's polygamma(1, x) (inf at 0, where jax's is nan)
    (x,), (t,) = primals, tangents
    return _digamma(x), t * _trigamma(x)


@jax.custom_jvp
def _tdiv(a, b):
    """``a / b`` differentiated as PyTorch's div: ``-grad * ((a / b) / b)`` for ``b`` (jax's
    ``a * b ** -2`` overflows at tiny ``b``), for derivative formulas that divide."""
    return a / b


@_tdiv.defjvp
def _tdiv_jvp(primals, tangents):
    (a, b), (ta, tb) = primals, tangents
    # the barrier keeps XLA from rewriting (a / b) / b into a / (b * b), which underflows
    q = jax.lax.optimization_barrier(a / b)
    return q, ta / b - tb * (q / b)


@jax.custom_jvp
def _trigamma(x):
    # PyTorch's calc_trigamma (polygamma(1, x), digamma's derivative): reflection below 0.5, six
    # recurrence steps, then the asymptotic series; inf at 0 and the negative integers' float
    # neighbours, 0 at +inf (jax.vjp of lax.digamma gives nan there)
    pi = jnp.asarray(jnp.pi, x.dtype)
    neg = x < 0.5
    s = jnp.sin(pi * x)
    res = jnp.where(neg, -(pi * pi) / (s * s), 0)
    x = jnp.where(neg, 1 - x, x)
    for _ in range(6):
        res = res + 1 / (x * x)
        x = x + 1
    ixx = 1 / (x * x)
    res = res + (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x
    return jnp.where(neg, -res, res)


@_trigamma.defjvp
def _trigamma_jvp(primals, tangents):
    # digamma's second derivative as PyTorch's polygamma(2, x) = -2 zeta(3, x), whose Cephes zeta
    # is inf at 0 and the negative integers (jax's: nan)
    (x,), (t,) = primals, tangents
    z = jnp.where((x <= 0) & (x == jnp.floor(x)), jnp.inf, jsp.zeta(jnp.asarray(3.0, x.dtype), x))
    return _trigamma(x), t * (-2 * z)


def _sinc_jvp(primals, tangents, out):
    # PyTorch's sinc_backward: (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 where pi x^2 == 0 (also
    # at tiny x, where jnp.sinc's derivative overflows to inf). The division is not made safe
    # because PyTorch's is not: its second derivative there is nan (0 * d(1 / x^2)), as here.
    (x,), (t,) = primals, tangents
    px, pxx = x * jnp.pi, x * x * jnp.pi
    d = (px * jnp.cos(px) - jnp.sin(px)) / pxx
    return t * jnp.where(pxx == 0, 0, d).astype(out.dtype)


def _sgn_jvp(primals, tangents, out):
    # PyTorch's sgn_backward: (grad - sgn * Re(grad / sgn)) / |x|, 0 where |x| == 0 (jax's
    # derivative of jnp.sign is 0, also for a complex x, where sgn = x / |x| is not constant).
    # For a real x it is 0, also at a nan x or cotangent, as PyTorch's. 1 / |x| is masked
    # (the transposed formula must give 0 there, not 0 / 0) but its own division is not made
    # safe because PyTorch's is not: its second derivative at 0 is nan, as here
    (x,), (t,) = primals, tangents
    if not jnp.iscomplexobj(x):
        return jnp.zeros_like(out)
    a = jnp.abs(x)
    inv = jnp.where(a == 0, 0, 1 / a).astype(out.dtype)
    return jnp.where(a == 0, 0, (t - out * jnp.real(jnp.conj(out) * t)) * inv).astype(out.dtype)


# PyTorch's derivative formulas where jax.vjp of the forward differs (the op table's jvp slot)
_JVP = {
    "sgn": _sgn_jvp,
    # grad * polygamma(1, self)
    "digamma": lambda p, t, out: t[0] * _trigamma(p[0]),
    "sinc": _sinc_jvp,
    # -0.5 * grad * result ** 3 (the sign of inf at -0 follows the result's, as PyTorch)
    "rsqrt": lambda p, t, out: -0.5 * t[0] * out ** 3,
    # grad * digamma(self), with PyTorch's digamma at 0
    "lgamma": lambda p, t, out: t[0] * _digamma(p[0]),
}  # PyTorch has no integer kernel for these


def _scalar_name(d):
    return _scalar_type_name(d)


for _name, _fn, _grad, _promote, _aliases in _UNARY:
    MATH_OPS[_name] = defop(_name, _fn, _grad, promote=_promote, jvp=_JVP.get(_name),
                            **_DTYPES.get(_name, {}))
    _f = _make_unary(_name, MATH_OPS[_name])
    export(_name, *_aliases, noargs=_f.noargs)(_f)
    for _n in (_name, *_aliases):
        inplace_method(_n + "_", _f)
    globals()[_name] = _f


def _inplace_not_implemented(name: str, aliases: tuple) -> None:
    """``Tensor.<name>_`` as PyTorch's: derivatives.yaml states no derivative for the in-place
    acosh_/asinh_/atanh_ (``not_implemented("inplace version of acosh")``), so their node
    (``AcoshBackward1``…) raises where a backward needs it."""
    what = f"inplace version of {name}"
    op = defop(name + "_", MATH_OPS[name].fn, name.capitalize() + "Backward1", promote="float",
               vjp=lambda primals, cot, *, grad_mode: (NotImplementedGrad(what),))
    f = _make_unary(name, op)
    for n in (name, *aliases):
        inplace_method(n + "_", f)


for _name, _fn, _grad, _promote, _aliases in _UNARY:
    if _name in ("acosh", "asinh", "atanh"):
        _inplace_not_implemented(_name, _aliases)

# (export's copies: each names itself in Python's errors)
fix, arcsin, arccos, arctan, arcsinh, arccosh, arctanh = (FUNCTIONS[n] for n in (
    "fix", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"))


def _round_dec(x, *, decimals):
    # PyTorch's formula: scale by 10**|decimals|, round half to even, unscale
    if _is_int(x):
        return x
    p = 10.0 ** abs(decimals)
    if decimals > 0:
        return jnp.round(x * p) / p
    return jnp.round(x / p) * p


_round0 = defop("round", _keep_int(jnp.round), "RoundBackward0", accepts="if", kernel="round_vml_cpu")
_round1 = defop("round_decimals", _round_dec, "RoundBackward1", accepts="f", kernel="round_cpu")


@export("round")
def round(input: Tensor, *, decimals: int = 0, out=None) -> Tensor:
    """Round half to even; with ``decimals`` to that many decimal places (``RoundBackward1``).

    >>> import funcgrad
    >>> funcgrad.round(funcgrad.tensor([0.5, 1.5, 2.567]), decimals=0)
    tensor([0., 2., 3.])
    """
    if decimals == 0:
        return _out(apply(_round0, input), out)
    return _out(apply(_round1, input, decimals=int(decimals)), out)


inplace_method("round_", round)

# ================================ predicates (never differentiable) ==============================
_PRED = [
    ("isnan", jnp.isnan), ("isinf", jnp.isinf), ("isfinite", jnp.isfinite),
    ("isposinf", jnp.isposinf), ("isneginf", jnp.isneginf), ("signbit", jnp.signbit),
    ("isreal", lambda x: jnp.imag(x) == 0 if jnp.iscomplexobj(x) else jnp.ones(x.shape, bool)),
]


def _make_pred(name, op):
    def f(input: Tensor, *, out=None) -> Tensor:
        return _out(apply(op, input), out, name, any_dtype)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` → bool tensor (not differentiable)."
    return f


for _name, _fn in _PRED:
    _op = defop(_name, _fn, None)
    _f = _make_pred(_name, _op)
    export(_name, noargs=noargs_method(op=_op))(_f)
    globals()[_name] = _f

_lnot = defop("logical_not", jnp.logical_not, None)


@export("logical_not", noargs=noargs_method(op=_lnot))
def logical_not(input: Tensor, *, out=None) -> Tensor:
    """Elementwise ``not`` (nonzero is true) → bool tensor."""
    return _out(apply(_lnot, input), out, check=any_dtype)


inplace_method("logical_not_", logical_not)

_LOGICAL = [("logical_and", jnp.logical_and), ("logical_or", jnp.logical_or),
            ("logical_xor", jnp.logical_xor)]


def _make_logical(name, op):
    def f(input: Tensor, other, *, out=None) -> Tensor:
        return _out(apply(op, input, _tensor(other)), out, name, any_dtype)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` (nonzero is true) → bool tensor."
    return f


for _name, _fn in _LOGICAL:
    _f = _make_logical(_name, defop(_name, _fn, None))
    inplace_method(_name + "_", _f, tensors=("other",))
    _f = export(_name, tensors=("input", "other"))(_f)
    globals()[_name] = _f

_isclose = defop("isclose", lambda a, b, rtol, atol, equal_nan: jnp.isclose(
    a, b, rtol=rtol, atol=atol, equal_nan=equal_nan), None, promote="compare")


@export("isclose")
def isclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise → bool tensor.

    >>> import funcgrad
    >>> funcgrad.isclose(funcgrad.tensor([1.0, 2.0]), funcgrad.tensor([1.0, 2.1]))
    tensor([ True, False])
    """
    if isinstance(other, Tensor) and input.dtype is not other.dtype:
        raise RuntimeError(f"{_scalar_name(input.dtype)} did not match "
                           f"{_scalar_name(other.dtype)}")
    return apply(_isclose, input, other, rtol=float(rtol), atol=float(atol),
                 equal_nan=bool(equal_nan))


@export("allclose")
def allclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True if every element of ``input`` is close to ``other`` (see :func:`isclose`)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@export("equal")
def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements (dtypes may differ)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(jnp.array_equal(input._value, other._value))


# ================================ binary math ====================================================


def _atan2_jvp(primals, tangents, out):
    # PyTorch's atan2_backward: grad * other * r and grad * -self * r, r the reciprocal of
    # self ** 2 + other ** 2 and 0 where that sum is 0 (jax.vjp: nan at (0, 0)); its derivative
    # there is nan, as PyTorch's (the zero cotangent of the branch not taken times 1 / 0 ** 2)
    (y, x), (ty, tx) = primals, tangents
    d = y * y + x * x
    r = jnp.where(d == 0, 0, 1 / d)
    return ty * x * r + tx * -y * r


_atan2 = defop("atan2", jnp.arctan2, "Atan2Backward0", promote="binary_float", jvp=_atan2_jvp)


def _hypot_jvp(primals, tangents, out):
    # PyTorch: grad * self / result (nan at (0, 0), where jax.vjp of jnp.hypot gives 0.5)
    (x, y), (tx, ty) = primals, tangents
    return (tx * x + ty * y) / out


_hypot = defop("hypot", jnp.hypot, "HypotBackward0", promote="binary", jvp=_hypot_jvp, accepts="f",
               kernel="hypot_cpu")
# scalar operands stay in ``diff`` so that they take part in the dtype promotion
_fmod_s = defop("fmod", jnp.fmod, "FmodBackward0", promote="binary", **int_division("fmod_cpu"))
_fmod_t = defop("fmod_tensor", jnp.fmod, "FmodBackward1", promote="binary", **int_division("fmod_cpu"))
# PyTorch: grad / (1 + exp(other - self)) and grad / (1 + exp(self - other)) (base 2: pow(2, ·)):
# 0 for the operand an infinite other one dominates, nan at (inf, inf) (jax.vjp: the softmax
# weights, 1 and 0.5 there)
def _logaddexp_jvp(primals, tangents, out):
    (x, y), (tx, ty) = primals, tangents
    return tx / (1 + jnp.exp(y - x)) + ty / (1 + jnp.exp(x - y))


def _logaddexp2_jvp(primals, tangents, out):
    (x, y), (tx, ty) = primals, tangents
    two = jnp.asarray(2, out.dtype)
    return tx / (1 + jnp.power(two, y - x)) + ty / (1 + jnp.power(two, x - y))


# the common dtype is checked, so integer-only operands never reach the kernel ("binary" is
# "binary_float" here)
_logaddexp = defop("logaddexp", jnp.logaddexp, "LogaddexpBackward0", promote="binary", accepts="fc",
                   kernel="logaddexp_cpu", jvp=_logaddexp_jvp)
_logaddexp2 = defop("logaddexp2", jnp.logaddexp2, "Logaddexp2Backward0", promote="binary", accepts="f",
                    kernel="logaddexp2_cpu", jvp=_logaddexp2_jvp)


def _xlogy_jvp(primals, tangents, out):
    # PyTorch: self: grad * log(other), 0 where self == 0 and other <= 0 (jax: 0 wherever
    # self == 0); other: grad * self / other
    (x, y), (tx, ty) = primals, tangents
    dx = jnp.where((x == 0) & (y <= 0), 0, jnp.log(jnp.where((x == 0) & (y <= 0), 1, y)))
    return tx * dx.astype(out.dtype) + ty * _tdiv(x, y)


_xlogy_t = defop("xlogy", jsp.xlogy, "XlogyBackward0", promote="binary_float", jvp=_xlogy_jvp)
_xlogy_s = defop("xlogy_scalar_other", jsp.xlogy, "XlogyBackward2", promote="binary_float", jvp=_xlogy_jvp)
_xlogy_self = defop("xlogy_scalar_self", jsp.xlogy, "XlogyBackward1", promote="binary_float",
                    jvp=_xlogy_jvp)
def _copysign_jvp(primals, tangents, out):
    # PyTorch: grad * result / self, masked to 0 where self == 0; no gradient for ``other``. The
    # division is not made safe, as PyTorch's is not (its second derivative at 0 is nan: 0 / 0)
    (x, _), (tx, _) = primals, tangents
    return tx * jnp.where(x == 0, 0, _tdiv(out, x))


_copysign_t = defop("copysign", jnp.copysign, "CopysignBackward0", promote="binary_float",
                    jvp=_copysign_jvp)
_copysign_s = defop("copysign_scalar", jnp.copysign, "CopysignBackward1", promote="binary_float",
                    jvp=_copysign_jvp)
def _heaviside(x, v):
    # PyTorch: x == 0 ? values : x > 0 (nan: 0), in the operands' common dtype
    return jnp.where(x == 0, v, x > 0).astype(jnp.result_type(x, v))


def _heaviside_jvp(primals, tangents, out):
    raise RuntimeError("derivative for aten::heaviside is not implemented")


# PyTorch records a ``NotImplemented`` node whose backward raises: the slot raises when the
# backward is traced
_heaviside = defop("heaviside", _heaviside, "NotImplemented", promote="binary", jvp=_heaviside_jvp)


def _clamp_bound_jvp(keep, other):
    # PyTorch (clamp_min.Tensor): self: where(self >= min, grad, 0); min: where(self < min, grad, 0)
    # (a nan on either side passes neither)
    def jvp(primals, tangents, out):
        (x, b), (tx, tb) = primals, tangents
        return jnp.where(keep(x, b), tx, 0) + jnp.where(other(x, b), tb, 0)
    return jvp


# jnp.maximum / minimum propagate a nan bound, as PyTorch's clamp_min / clamp_max
_clamp_min_t = defop("clamp_min_tensor", jnp.maximum, "ClampMinBackward1", promote="binary",
                     jvp=_clamp_bound_jvp(jnp.greater_equal, jnp.less), accepts="bif", kernel="maximum_cpu")
_clamp_max_t = defop("clamp_max_tensor", jnp.minimum, "ClampMaxBackward1", promote="binary",
                     jvp=_clamp_bound_jvp(jnp.less_equal, jnp.greater), accepts="bif", kernel="minimum_cpu")


@export("atan2", "arctan2", tensors=("input", "other"))
def atan2(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Elementwise ``atan2(input, other)`` with the quadrant of ``(other, input)``."""
    return _out(apply(_atan2, input, other), out)


@export("hypot", tensors=("input", "other"))
def hypot(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``sqrt(input**2 + other**2)`` elementwise (floating inputs only, as in PyTorch)."""
    return _out(apply(_hypot, input, other), out)


@export("fmod")
def fmod(input: Tensor, other, *, out=None) -> Tensor:
    """C-style remainder (sign of the dividend); ``FmodBackward0`` for a scalar divisor."""
    if isinstance(other, Tensor):
        return _out(apply(_fmod_t, input, other), out)
    return _out(apply(_fmod_s, input, other), out)


@export("logaddexp", tensors=("input", "other"))
def logaddexp(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``log(exp(input) + exp(other))`` computed stably."""
    return _out(apply(_logaddexp, input, other), out)


@export("logaddexp2", tensors=("input", "other"))
def logaddexp2(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``log2(2**input + 2**other)`` computed stably."""
    return _out(apply(_logaddexp2, input, other), out)


@export("xlogy")
def xlogy(input, other, *, out=None) -> Tensor:
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is nan)."""
    if not isinstance(input, Tensor):
        return _out(apply(_xlogy_self, input, other), out)
    if not isinstance(other, Tensor):
        return _out(apply(_xlogy_s, input, other), out)
    return _out(apply(_xlogy_t, input, other), out)


@export("copysign")
def copysign(input: Tensor, other, *, out=None) -> Tensor:
    """``|input|`` with the sign of ``other`` (the gradient of ``input`` is 0 at 0, as PyTorch)."""
    if isinstance(other, Tensor):
        return _out(apply(_copysign_t, input, other), out)
    return _out(apply(_copysign_s, input, other), out)


@export("heaviside", tensors=("input", "values"))
def heaviside(input: Tensor, values: Tensor, *, out=None) -> Tensor:
    """Step function: 0 for ``input < 0``, ``values`` at 0, 1 above; not differentiable."""
    if isinstance(values, Tensor) and values.dtype is not input.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return _out(apply(_heaviside, input, values), out, refuse_grad=False)


@export("clamp_min")
def clamp_min(input: Tensor, min, *, out=None) -> Tensor:
    """``clamp(input, min=min)``; a tensor ``min`` is differentiable (``ClampMinBackward1``)."""
    if isinstance(min, Tensor):
        return _out(apply(_clamp_min_t, input, min), out)
    return _out(apply(_clamp_min_s, scalar_bounds_dtype(input, min), min), out)


@export("clamp_max")
def clamp_max(input: Tensor, max, *, out=None) -> Tensor:
    """``clamp(input, max=max)``; a tensor ``max`` is differentiable (``ClampMaxBackward1``)."""
    if isinstance(max, Tensor):
        return _out(apply(_clamp_max_t, input, max), out)
    return _out(apply(_clamp_max_s, scalar_bounds_dtype(input, max), max), out)


for _n, _f in [("atan2_", atan2), ("arctan2_", atan2), ("hypot_", hypot), ("fmod_", fmod),
               ("xlogy_", xlogy), ("copysign_", copysign), ("heaviside_", heaviside),
               ]:
    inplace_method(_n, _f)
# number bounds: PyTorch's structured Scalar kernel names self's C++ type in its cast error
inplace_method("clamp_min_", clamp_min, c_type_cast=True)
inplace_method("clamp_max_", clamp_max, c_type_cast=True)

# ================================ ternary and nan_to_num =========================================


def _lerp(s, e, w):
    # PyTorch's two-sided formula: exact at both ends (w == 0 gives s, w == 1 gives e)
    return jnp.where(jnp.abs(w) < 0.5, s + w * (e - s), e - (e - s) * (1 - w))


_lerp_s = defop("lerp", _lerp, "LerpBackward0", promote="binary", diff=(0, 1))
_lerp_t = defop("lerp_tensor", _lerp, "LerpBackward1", promote="binary")
_addcmul = defop("addcmul", lambda x, a, b, value: x + value * a * b, "AddcmulBackward0",
                 promote="binary", diff=(0, 1, 2))
_addcdiv = defop("addcdiv", lambda x, a, b, value: x + value * (a / b), "AddcdivBackward0",
                 promote="binary_float", diff=(0, 1, 2))


def _c10_name(d) -> str:
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int"}.get(d.name, d.name)


@export("lerp")
def lerp(input: Tensor, end: Tensor, weight, *, out=None) -> Tensor:
    """``input + weight * (end - input)``; ``LerpBackward1`` when ``weight`` is a tensor."""
    for nm, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {_c10_name(input.dtype)} for `{nm}` but got dtype "
                               f"{_c10_name(t.dtype)}")
    if isinstance(weight, Tensor):
        return _out(apply(_lerp_t, input, end, weight), out)
    return _out(apply(_lerp_s, input, end, weight), out)


@export("addcmul")
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    return _out(apply(_addcmul, input, tensor1, tensor2, value), out)


@export("addcdiv")
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out=None) -> Tensor:
    """``input + value * tensor1 / tensor2`` (integer ``tensor1``/``tensor2`` are refused)."""
    if all(isinstance(t, Tensor) and t.dtype._kind in "bi" for t in (tensor1, tensor2)):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    return _out(apply(_addcdiv, input, tensor1, tensor2, value), out)


def _nan_to_num(x, *, nan, posinf, neginf):
    if _is_int(x):
        return x
    return jnp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


_nan_to_num_op = defop("nan_to_num", _nan_to_num, "NanToNumBackward0")


def _nan_to_num_out(r, o):
    if r.dtype is not o.dtype:
        return (f"nan_to_num: dtype of out: {_scalar_type_name(o.dtype)} should be same as input: "
                f"{_scalar_type_name(r.dtype)}")
    return None


@export("nan_to_num")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None, *, out=None) -> Tensor:
    """Replace nan/+inf/-inf (default: 0 and the dtype's largest/lowest finite values); the
    gradient is 0 at replaced elements.

    >>> import funcgrad
    >>> funcgrad.nan_to_num(funcgrad.tensor([float("nan"), 1.0, float("inf")]), posinf=9.0)
    tensor([0., 1., 9.])
    """
    return _out(apply(_nan_to_num_op, input, nan=float(nan),
                      posinf=None if posinf is None else float(posinf),
                      neginf=None if neginf is None else float(neginf)), out, check=_nan_to_num_out)


for _n, _f in [("lerp_", lerp), ("addcmul_", addcmul), ("addcdiv_", addcdiv),
               ("nan_to_num_", nan_to_num)]:
    inplace_method(_n, _f)

__all__ = [n for n, _, _, _, _ in _UNARY] + [
    "fix", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "round",
    *[n for n, _ in _PRED], "logical_not", *[n for n, _ in _LOGICAL], "isclose", "allclose",
    "equal", "atan2", "hypot", "fmod", "logaddexp", "logaddexp2", "xlogy", "copysign",
    "heaviside", "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv", "nan_to_num"]

from .pointwise import _pos as positive  # noqa: E402  (torch.positive: returns input itself)

__all__ += ["positive"]
