"""Op table — special functions: logit, polygamma, mvlgamma, the modified Bessel functions
(i0, i0e, i1, i1e), the normal distribution helpers (ndtr, ndtri, log_ndtr), erfcx, entr,
xlog1py, Hurwitz zeta, the regularized incomplete gamma functions (igamma, igammac), frexp and
ldexp.

Where PyTorch's derivative differs from what ``jax.vjp`` of the forward would give (logit outside
[0, 1], i0 at 0, xlog1py at ``self == 0, other <= -1``) the op states PyTorch's formula in
the op table's ``jvp`` slot, so the backward kernel is still the cached jitted vjp of the op. Where
``derivatives.yaml`` marks an input's derivative ``not_implemented`` (zeta's and igamma's ``self``)
the ``vjp`` slot raises PyTorch's NotImplementedError when the backward needs it.
"""

from __future__ import annotations

import collections
import math

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
from jax.custom_derivatives import SymbolicZero

from .._factories import tensor
from .._tensor import _scalar_type_name
from ._registry import NotImplementedGrad, Tensor, apply, defop, export, inplace_method, noargs_method
from ._registry import check_out_grad
from ._registry import write_out as _out


# ---- pure kernels and PyTorch's derivatives (the op table's ``jvp`` slot) -------------------------
def _logit_fn(x, eps=None):
    if eps is not None:
        lo = jnp.asarray(eps, x.dtype)
        x = jnp.where(x < lo, lo, jnp.where(x > 1 - lo, 1 - lo, x))
    return jnp.log(x / (1 - x))


def _logit_jvp(primals, tangents, out, eps=None):
    (x,), (t,) = primals, tangents
    # the tangent is divided by (or multiplied with) a factor: a constant picked by ``where``
    # would vanish in the vjp
    if eps is None:  # PyTorch's vectorized logit_backward (and its formula under grad mode):
        # grad / (x * (1 - x)) inside [0, 1] (±inf at ±0 and 1), nan outside
        return t / jnp.where((x < 0) | (x > 1), jnp.nan, x * (1 - x))
    # zero where clamped (the bounds themselves pass the gradient)
    return t * jnp.where((x < eps) | (x > 1 - eps), 0, 1 / (x * (1 - x)))


def _i0_jvp(primals, tangents, out):
    # jax.scipy's i0 goes through |x| and has derivative 1 at 0; i0' = i1 (0 at 0), itself
    # differentiated with PyTorch's i1 formula (i0's second derivative at nan is finite there)
    (x,), (t,) = primals, tangents
    return t * _i1(x)


def _i1_jvp(primals, tangents, out):
    # PyTorch's i1_backward: i0(x) - i1(x) / x with x made safe, and 0.5 where |x| <= eps (also at
    # nan, where the comparison is false; jax.vjp gives nan)
    (x,), (t,) = primals, tangents
    eps = jnp.finfo(x.dtype).eps
    big = jnp.abs(x) > eps
    safe = jnp.where(big, x, eps)
    return t * jnp.where(big, jsp.i0(safe) - out * (1 / safe), 0.5)


@jax.custom_jvp
def _i1(x):
    return jsp.i1(x)


@_i1.defjvp
def _i1_rule(primals, tangents):
    out = _i1(primals[0])
    return out, _i1_jvp(primals, tangents, out)


def _xlog1py_jvp(primals, tangents, out):
    (x, y), (tx, ty) = primals, tangents
    dx = jnp.where((x == 0) & (y <= -1), 0, jnp.log1p(y))
    return dx * tx + x / (y + 1) * ty


def _polygamma_fn(x, *, n):
    return jsp.polygamma(n, x)


def _mvlgamma_fn(x, *, p):
    return jsp.multigammaln(x, p)


def _frexp_fn(x):
    # the exponent is a step function: the mantissa's derivative is 2**-exponent (FrexpBackward0)
    e = jnp.frexp(jax.lax.stop_gradient(x))[1]
    return x * jnp.exp2(-e).astype(x.dtype), e


def _ldexp_fn(x, e):
    return x * jnp.exp2(e)


def _ndtr_fn(x):
    return jsp.ndtr(x)


# (key, fn, PyTorch node name)
_logit = defop("logit", _logit_fn, "LogitBackward0", promote="float", jvp=_logit_jvp)
_polygamma = defop("polygamma", _polygamma_fn, "PolygammaBackward0", promote="float")
_mvlgamma = defop("mvlgamma", _mvlgamma_fn, "MvlgammaBackward0", promote="float")
_i0 = defop("i0", jsp.i0, "I0Backward0", promote="float", jvp=_i0_jvp)
_UNARY = {
    "i0e": (jsp.i0e, "SpecialI0EBackward0"),
    "i1": (jsp.i1, "SpecialI1Backward0"),
    "i1e": (jsp.i1e, "SpecialI1EBackward0"),
    # PyTorch's ndtr is a composite ``(1 + erf(x / sqrt 2)) * 0.5``: its node is the last mul
    "ndtr": (_ndtr_fn, "MulBackward1"),
    "ndtri": (jsp.ndtri, "SpecialNdtriBackward0"),
    "log_ndtr": (jsp.log_ndtr, "SpecialLogNdtrBackward0"),
    "erfcx": (jsp.erfcx, "SpecialErfcxBackward0"),
    "entr": (jsp.entr, "SpecialEntrBackward0"),
}
_SPECIAL_JVP = {
    "i1": _i1_jvp,
    # PyTorch: grad * sqrt(2 pi) * exp(result ** 2 / 2) (inf at 0 and 1, where jax.vjp gives 0)
    "ndtri": lambda p, t, out: t[0] * math.sqrt(2 * math.pi) * jnp.exp(out * out / 2),
}
SPECIAL_OPS = {k: defop("special_" + k, f, g, promote="float", jvp=_SPECIAL_JVP.get(k))
               for k, (f, g) in _UNARY.items()}
_xlog1py_t = defop("special_xlog1py", jsp.xlog1py, "SpecialXlog1PyBackward0", promote="binary_float",
                   jvp=_xlog1py_jvp)
_xlog1py_self = defop("special_xlog1py_self_scalar", jsp.xlog1py, "SpecialXlog1PyBackward1",
                      promote="binary_float", jvp=_xlog1py_jvp)
_xlog1py_other = defop("special_xlog1py_other_scalar", jsp.xlog1py, "SpecialXlog1PyBackward2",
                       promote="binary_float", jvp=_xlog1py_jvp)


@jax.custom_jvp
def _zeta_q(x, q):
    """``zeta(x, q)`` differentiable in ``q`` only, as PyTorch's ``special_zeta``: the formula of
    q's gradient calls it, so a double backward needing x's raises there too."""
    return jsp.zeta(x, q)


def _zeta_q_jvp(primals, tangents):
    (x, q), (tx, tq) = primals, tangents
    if type(tx) is not SymbolicZero:
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")
    y = _zeta_q(x, q)
    return y, jnp.zeros_like(y) if type(tq) is SymbolicZero else tq * -x * _zeta_q(x + 1, q)


_zeta_q.defjvp(_zeta_q_jvp, symbolic_zeros=True)


def _zeta_vjp(primals, cot, *, grad_mode):
    # derivatives.yaml: self: not_implemented("zeta"); other: grad * -self * special_zeta(self + 1., other)
    x, q = primals
    return NotImplementedGrad("zeta"), cot * -x * _zeta_q(x + 1, q)


# PyTorch has no derivative of zeta wrt x ("the derivative for 'zeta' is not implemented"): only q
_zeta_t = defop("special_zeta", jsp.zeta, "SpecialZetaBackward0", promote="binary_float", vjp=_zeta_vjp)
_zeta_self = defop("special_zeta_self_scalar", jsp.zeta, "SpecialZetaBackward1",
                   promote="binary_float", diff=(1,))
# q a scalar: PyTorch records a node whose backward raises
_zeta_other = defop("special_zeta_other_scalar", jsp.zeta, "SpecialZetaBackward2", promote="binary_float",
                    vjp=lambda primals, cot, *, grad_mode: (NotImplementedGrad("zeta"), None))


def _igamma_fn(lower: bool):
    """jax's regularized incomplete gamma function, lower (``P``) or upper (``Q``), with PyTorch's
    special cases in its order (calc_igamma / calc_igammac): jax gives nan at ``a == 0 < x``, at an
    infinite ``a`` and at a nan ``a`` paired with ``x`` 0 or infinite."""
    jf = jsp.gammainc if lower else jsp.gammaincc
    at_zero, at_inf = (0.0, 1.0) if lower else (1.0, 0.0)  # (P, Q) at x == 0 and x == inf

    def f(a, x):
        r = jnp.where(jnp.isinf(x), at_inf, jf(a, x))
        r = jnp.where(jnp.isinf(a), jnp.where(jnp.isinf(x), jnp.nan, at_zero), r)
        r = jnp.where(x == 0, at_zero, r)
        r = jnp.where(a == 0, jnp.where(x > 0, at_inf, jnp.nan), r)
        return jnp.where((x < 0) | (a < 0), jnp.nan, r).astype(r.dtype)
    return f


def _igamma_vjp(lower: bool):
    # derivatives.yaml: self: not_implemented("igamma: input");
    # other: grad * exp((self - 1) * log(other) - other - lgamma(self)) (igammac: -grad * ...)
    what = "igamma: input" if lower else "igammac: input"

    def vjp(primals, cot, *, grad_mode):
        a, x = primals
        e = jnp.exp((a - 1) * jnp.log(x) - x - jax.lax.lgamma(a))
        return NotImplementedGrad(what), (cot if lower else -cot) * e
    return vjp


# Tensor-Tensor only (no Scalar overloads); floating dtypes only, after PyTorch's promotion
_igamma = defop("igamma", _igamma_fn(True), "IgammaBackward0", promote="binary", vjp=_igamma_vjp(True),
                accepts="f", kernel="igamma_cpu")
_igammac = defop("igammac", _igamma_fn(False), "IgammacBackward0", promote="binary",
                 vjp=_igamma_vjp(False), accepts="f", kernel="igammac_cpu")
_frexp = defop("frexp", _frexp_fn, "FrexpBackward0", diff_outputs=(0,))
_ldexp = defop("ldexp", _ldexp_fn, "LdexpBackward0", promote="binary_float")

frexp_result = collections.namedtuple("frexp", ["mantissa", "exponent"])
frexp_result.__module__ = "funcgrad.return_types"


def _check_float(x: Tensor, fname: str) -> None:
    if x.dtype._kind in "bi":
        raise RuntimeError(f"\"{fname}_cpu\" not implemented for '{_scalar_type_name(x.dtype)}'")


# ---- frontends ---------------------------------------------------------------------------------
@export("logit")
def logit(input: Tensor, eps: float | None = None, *, out=None) -> Tensor:
    """``log(x / (1 - x))``, with ``x`` first clamped to ``[eps, 1 - eps]`` when ``eps`` is given.

    >>> import funcgrad
    >>> funcgrad.logit(funcgrad.tensor([0.5, 0.0, 1.0]), eps=0.25)
    tensor([ 0.0000, -1.0986,  1.0986])
    """
    return _out(apply(_logit, input, eps=None if eps is None else float(eps)), out)


@export("polygamma", method=False)
def polygamma(n: int, input: Tensor, *, out=None) -> Tensor:
    """The ``n``-th derivative of the digamma function (``polygamma(0, x) == digamma(x)``).

    >>> import funcgrad
    >>> funcgrad.polygamma(1, funcgrad.tensor([1.0, 2.0]))
    tensor([1.6449, 0.6449])
    """
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _out(apply(_polygamma, input, n=int(n)), out)


@export("polygamma", function=False)
def _polygamma_method(self: Tensor, n: int) -> Tensor:
    return polygamma(n, self)


@export("mvlgamma")
def mvlgamma(input: Tensor, p: int, *, out=None) -> Tensor:
    """Multivariate log-gamma of dimension ``p`` (``special.multigammaln``).

    >>> import funcgrad
    >>> funcgrad.mvlgamma(funcgrad.tensor([3.0]), 2)
    tensor([1.5502])
    """
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return _out(apply(_mvlgamma, input, p=int(p)), out)


@export("i0", noargs=noargs_method(op=_i0))
def i0(input: Tensor, *, out=None) -> Tensor:
    """Modified Bessel function of the first kind, order 0.

    >>> import funcgrad
    >>> funcgrad.i0(funcgrad.tensor([0.0, 1.0]))
    tensor([1.0000, 1.2661])
    """
    return _out(apply(_i0, input), out)


def _unary(name: str):
    op = SPECIAL_OPS[name]

    def f(input: Tensor, *, out=None) -> Tensor:
        return _out(apply(op, input), out, name)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``torch.special.{name}`` elementwise; differentiable."
    return f


i0e, i1, i1e = _unary("i0e"), _unary("i1"), _unary("i1e")
ndtr, ndtri, log_ndtr = _unary("ndtr"), _unary("ndtri"), _unary("log_ndtr")
erfcx, entr = _unary("erfcx"), _unary("entr")


def _as_tensor(x):
    return tensor(x)


def xlog1py(input, other, *, out=None) -> Tensor:
    """``input * log1p(other)``, 0 where ``input == 0`` (unless ``other`` is nan)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = _as_tensor(input)
    if not isinstance(input, Tensor):
        return _out(apply(_xlog1py_self, input, other), out, name="special_xlog1py")
    if not isinstance(other, Tensor):
        return _out(apply(_xlog1py_other, input, other), out, name="special_xlog1py")
    return _out(apply(_xlog1py_t, input, other), out, name="special_xlog1py")


def zeta(input, other, *, out=None) -> Tensor:
    """Hurwitz zeta ``sum_k (k + other) ** -input``; differentiable in ``other`` only, as PyTorch."""
    check_out_grad(out, "special_zeta", input, other)  # (PyTorch's out= refuses an input requiring grad too)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = _as_tensor(input)
    if not isinstance(input, Tensor):
        return _out(apply(_zeta_self, input, other), out)
    if not isinstance(other, Tensor):
        return _out(apply(_zeta_other, input, other), out)
    return _out(apply(_zeta_t, input, other), out)


@export("igamma", tensors=("input", "other"))
def igamma(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The regularized lower incomplete gamma function ``P(input, other)``; differentiable in
    ``other`` only (PyTorch raises for ``input``'s derivative).

    >>> import funcgrad
    >>> funcgrad.igamma(funcgrad.tensor([1.0, 2.0]), funcgrad.tensor([0.5, 1.0]))
    tensor([0.3935, 0.2642])
    """
    return _out(apply(_igamma, input, other), out)


@export("igammac", tensors=("input", "other"))
def igammac(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P(input, other)``.

    >>> import funcgrad
    >>> funcgrad.igammac(funcgrad.tensor([1.0, 2.0]), funcgrad.tensor([0.5, 1.0]))
    tensor([0.6065, 0.7358])
    """
    return _out(apply(_igammac, input, other), out)


@export("frexp")
def frexp(input: Tensor, *, out=None):
    """``(mantissa, exponent)`` with ``input == mantissa * 2**exponent``, ``|mantissa|`` in [0.5, 1).

    >>> import funcgrad
    >>> funcgrad.frexp(funcgrad.tensor([1.0, -3.0])).exponent.tolist()
    [1, 2]
    """
    if input.dtype._kind in "bic":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = apply(_frexp, input)
    if out is not None:
        out[0].copy_(m)
        out[1].copy_(e)
        return frexp_result(*out)
    return frexp_result(m, e)


@export("ldexp")
def ldexp(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``input * 2**other`` (a floating result, as PyTorch).

    >>> import funcgrad
    >>> funcgrad.ldexp(funcgrad.tensor([1.0, 2.0]), funcgrad.tensor([1, 2]))
    tensor([2., 8.])
    """
    if not isinstance(other, Tensor):
        other = _as_tensor(other)
    return _out(apply(_ldexp, input, other), out)


for _n, _f in (("logit_", logit), ("i0_", i0), ("mvlgamma_", mvlgamma), ("ldexp_", ldexp)):
    inplace_method(_n, _f)
inplace_method("polygamma_", _polygamma_method)
inplace_method("igamma_", igamma, tensors=("other",))
inplace_method("igammac_", igammac, tensors=("other",))

__all__ = ["logit", "polygamma", "mvlgamma", "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr",
           "erfcx", "entr", "xlog1py", "zeta", "igamma", "igammac", "frexp", "ldexp", "frexp_result"]
