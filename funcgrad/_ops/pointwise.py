"""Op table — pointwise ops: unary, binary arithmetic, comparisons, clamp, where."""

from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np

from .. import _dtype
from .._broadcast import infer_size, infer_size_all
from .._dispatch import binary_caller
from .._dtype import float64
from .._factories import from_numpy, tensor
from .._host import host_exact
from .._tensor import _scalar_type_name
from ._registry import (FUNCTIONS, REQUIRED, Tensor, apply, defop, export, inplace_method, operand, refuse,
                        rerun)
from ._parser import type_name
from ._registry import any_dtype, cast_dtype, noargs_method
from ._registry import write_out as _out
from .shape import nonzero

# ================================ unary ==========================================================
# (name, jnp fn, PyTorch node name, promote) — promote "float": integer inputs → default float.
_UNARY = [
    ("exp", jnp.exp, "ExpBackward0", "float"),
    ("log", jnp.log, "LogBackward0", "float"),
    ("sqrt", jnp.sqrt, "SqrtBackward0", "float"),
    ("sin", jnp.sin, "SinBackward0", "float"),
    ("cos", jnp.cos, "CosBackward0", "float"),
    ("tanh", jnp.tanh, "TanhBackward0", "float"),
    ("sigmoid", jax.nn.sigmoid, "SigmoidBackward0", "float"),
    ("neg", jnp.negative, "NegBackward0", "none"),
    ("abs", jnp.abs, "AbsBackward0", "none"),
    ("relu", jax.nn.relu, "ReluBackward0", "none"),
]
UNARY_OPS = {}


def _abs_jvp(primals, tangents, out):
    # PyTorch: grad * self.sgn() (subgradient 0 at 0, where jax.vjp of jnp.abs gives 1)
    (x,), (t,) = primals, tangents
    if jnp.iscomplexobj(x) or not jnp.issubdtype(x.dtype, jnp.floating):
        return jax.jvp(jnp.abs, primals, tangents)[1]
    return t * jnp.where(x > 0, 1, jnp.where(x < 0, -1, 0)).astype(x.dtype)  # sgn(nan) = 0


def _relu_jvp(primals, tangents, out):
    # PyTorch: threshold_backward(grad, result, 0): zero where result <= 0 (nan passes)
    (t,) = tangents
    return jnp.where(out <= 0, jnp.zeros_like(t), t)


_JVP = {"abs": _abs_jvp, "relu": _relu_jvp}
# the dtypes PyTorch's kernels take (``defop``'s accepts / kernel / errors)
NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
            "invert a mask, use the `~` or `logical_not()` operator instead.")
CLAMP_COMPLEX = (NotImplementedError, "clamp is not supported for complex types")
_DTYPES = {
    "neg": dict(errors={"b": (RuntimeError, NEG_BOOL)}),
    "abs": dict(accepts="ifc", kernel="abs_cpu"),
    "relu": dict(errors={"b": (RuntimeError, "Boolean inputs not supported for relu"), "c": CLAMP_COMPLEX}),
}


def _make_unary(name, op):
    call = op._call1  # apply(op, input), unrolled

    def f(input: Tensor, *, out=None) -> Tensor:
        r = call(input)
        return r if out is None else _out(r, out, name)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` (PyTorch's ``torch.{name}``); differentiable."
    f.noargs = noargs_method(call)  # (its methods: export's noargs)
    return f


for _name, _fn, _grad, _promote in _UNARY:
    UNARY_OPS[_name] = defop(_name, _fn, _grad, promote=_promote, linear=_name == "neg",
                             jvp=_JVP.get(_name), **_DTYPES.get(_name, {}))
    _f = _make_unary(_name, UNARY_OPS[_name])
    export(_name, noargs=_f.noargs)(_f)
    inplace_method(_name + "_", _f)
    globals()[_name] = _f

# |x| with PyTorch's derivative, for composite kernels (vector_norm): the abs op's own function
_abs = UNARY_OPS["abs"].traced((), None, 1)
negative = export("negative", noargs=globals()["neg"].noargs)(globals()["neg"])
absolute = export("absolute", noargs=globals()["abs"].noargs)(globals()["abs"])
inplace_method("negative_", negative)
inplace_method("absolute_", absolute)
export("__neg__", function=False)(negative)
export("__abs__", function=False)(absolute)


def _pos(x):
    return x


export("positive", "__pos__", noargs=noargs_method())(_pos)

# ================================ binary arithmetic ==============================================
def _with_alpha(combine):
    """PyTorch's ``combine(x, alpha * y)`` (add, sub). ``alpha`` left out is its default 1, and
    the kernel has one operand fewer (each costs ~1 µs a call): a real result combines ``y`` as
    it is (``1 * y`` is ``y``), a complex one keeps the product, as PyTorch's kernel does
    (``inf * (1+0j)`` has a nan imaginary part), also where a trace sees a Python 1. A given
    alpha arrives traced, so the result is cast back (bool + bool is bool, a logical or)."""
    def fn(x, y, alpha=None):
        rt = jnp.result_type(x, y)
        if alpha is None or _is_one(alpha):
            if not jnp.issubdtype(rt, jnp.complexfloating):
                return combine(x, y).astype(rt)
            alpha = jax.lax.optimization_barrier(jnp.ones((), rt))  # (XLA would fold 1 * y)
        return combine(x, alpha * y).astype(rt)
    return fn


_sub_fn = _with_alpha(lambda x, y: x - y)
_add = defop("add", _with_alpha(lambda x, y: x + y), "AddBackward0", promote="binary", diff=(0, 1),
             linear=True)
_sub = defop("sub", _sub_fn, "SubBackward0", promote="binary", diff=(0, 1), linear=True)
_rsub = defop("rsub", lambda x, y, alpha=None: _sub_fn(y, x, alpha), "RsubBackward1", promote="binary",
              diff=(0, 1), linear=True)
_mul = defop("mul", jnp.multiply, "MulBackward0", promote="binary")


def true_divide(x, y):
    """``x / y`` element by element, as PyTorch's CPU kernel divides (float types). XLA turns a
    division by a broadcast or a constant into a product with its reciprocal, one ulp off where
    the quotient is inexact (``(rand - 0.1307) / 0.3081``, ``x / 10``); so a divisor of another
    shape, or one that is not an array (a Python number), is broadcast and passes an optimization
    barrier first."""
    if jnp.shape(x) != jnp.shape(y) or not isinstance(y, jax.Array):
        x, y = jnp.broadcast_arrays(x, y)
        y = jax.lax.optimization_barrier(y)
    return jnp.true_divide(x, y)


@jax.custom_jvp
def torch_div(x, y):
    """``x / y`` whose derivatives, at every order, are PyTorch's div formulas: self:
    ``grad / other``, other: ``-grad * ((self / other) / other)``. jax's divides by ``other ** 2``,
    which overflows or underflows (nan at 0 / 1e-300 and at inf / 1e300). Stated derivatives divide
    with it, so that double backward differentiates their division as PyTorch does."""
    return true_divide(x, y)


def _div_jvp(primals, tangents, out):
    # (the barrier: XLA would rewrite (x / y) / y as x / (y * y))
    (_, y), (tx, ty) = primals, tangents
    return torch_div(tx, y) - ty * torch_div(jax.lax.optimization_barrier(out), y)


@torch_div.defjvp
def _torch_div_jvp(primals, tangents):
    out = torch_div(*primals)
    return out, _div_jvp(primals, tangents, out)


_div = defop("div", true_divide, "DivBackward0", promote="binary_float", jvp=_div_jvp)


def _int_divisor_zero(vals):
    """PyTorch's integer division by zero (it checks the divisor's values on the host)."""
    y = vals[1]
    if isinstance(y, jax.core.Tracer):  # under funcgrad.jit the values are not known
        return
    if (y == 0) if not hasattr(y, "shape") else bool(_has_zero(y)):
        raise RuntimeError("ZeroDivisionError")


_has_zero = jax.jit(lambda y: jnp.any(y == 0))


def int_division(kernel):
    """``defop`` dtype rule of PyTorch's integer-capable division kernels."""
    return dict(accepts="if", kernel=kernel, errors={"i": _int_divisor_zero})


def _div_trunc_fn(x, y):
    # integers: C division (rounding toward 0), exact beyond 2**53
    if jnp.issubdtype(x.dtype, jnp.integer):
        q = jnp.floor_divide(x, y)
        return jnp.where((q < 0) & (q * y != x), q + 1, q)
    if jnp.shape(x) != jnp.shape(y):
        # XLA turns a division by a broadcast into a product with its reciprocal, one ulp off
        # (1e-300 / 1e-300 = 0.999…, truncated to 0); PyTorch divides elementwise
        x, y = jnp.broadcast_arrays(x, y)
        y = jax.lax.optimization_barrier(y)
    return jnp.trunc(x / y)


_div_floor = defop("div_floor", jnp.floor_divide, "DivBackward2", promote="binary",
                   **int_division("div_floor_cpu"))
_div_trunc = defop("div_trunc", _div_trunc_fn, "DivBackward2", promote="binary",
                   **int_division("div_trunc_cpu"))
# scalar / tensor: PyTorch computes reciprocal * scalar, hence its node name
_rdiv = defop("rdiv", lambda x, y: y / x, "MulBackward0", promote="binary_float")


def _remainder_jvp(primals, tangents, out):
    # PyTorch: self: grad; other: -grad * self.div(other, rounding_mode="floor"), whose floor
    # division gives nan for an infinite self (jax.vjp: ∓inf) and has a zero derivative
    (x, y), (tx, ty) = primals, tangents
    return tx - ty * jax.lax.stop_gradient(jnp.floor_divide(x, y))


_remainder = defop("remainder", jnp.remainder, "RemainderBackward1", promote="binary",
                   jvp=_remainder_jvp, **int_division("remainder_cpu"))
_remainder_s = defop("remainder_scalar", jnp.remainder, "RemainderBackward0", promote="binary",
                     **int_division("remainder_cpu"))


# PyTorch's pow derivatives (pow_backward_self / pow_backward_exponent): zero for exponent 0
# (jax.vjp: 0 * x ** -1 = nan at x = 0), and for base 0 with exponent >= 0
def _power(x, e):
    """``x ** e`` for a scalar exponent with PyTorch's CPU kernel's bits (``pow_tensor_scalar``):
    sqrt / rsqrt / reciprocal at 0.5 / -0.5 / -1 (nan at -inf, not inf), and products at 2, 3
    and -2 (``x * x``, ``x * x * x``, ``1 / (x * x)``); a general pow is off by an ulp there
    (``x ** 2`` differed from ``x * x`` in 0.1 % of float32 inputs, ``x ** 3`` in 0.1 %)."""
    if not jnp.issubdtype(jnp.result_type(x), jnp.floating):
        return jnp.power(x, e)
    return _float_power_scalar(x, e)


@jax.custom_jvp
def _float_power_scalar(x, e):
    # each branch gets inputs it is finite on where it is not taken (no inf or nan from a branch
    # not taken, at any order of derivative)
    branches = ((e == 0.5, jnp.sqrt), (e == -0.5, jax.lax.rsqrt), (e == -1, lambda v: 1 / v),
                (e == 2, lambda v: v * v), (e == 3, lambda v: v * v * v),
                (e == -2, lambda v: 1 / (v * v)))
    taken = functools.reduce(operator.or_, (c for c, _ in branches))
    out = jnp.power(jnp.where(taken, 1, x), e)
    for cond, f in branches:
        out = jnp.where(cond, f(jnp.where(cond, x, 1)), out)
    return out


@_float_power_scalar.defjvp
def _float_power_scalar_jvp(primals, tangents):
    # every derivative order is PyTorch's pow_backward, ``grad * (e * x.pow(e - 1))`` (0 at e == 0),
    # whose inner pow is again this kernel: not the derivative of the branch taken (autodiff of
    # ``1 / (x * x)`` gave other bits than PyTorch's ``-2 * x.pow(-3)`` in double backward)
    (x, e), (tx, _) = primals, tangents
    return _float_power_scalar(x, e), _pow_self(x, e, tx, safe=True)


def _pow_self(x, e, t, safe=False):
    # PyTorch: where(exponent == 0, 0, grad * exponent * self ** (exponent - 1)) (the gradient
    # masked, so a nan cotangent there gives 0, as in double backward through ``result``).
    # ``safe``: the scalar overload returns zeros without touching self at exponent 0, so its
    # second derivative is 0 there (the tensor overload's where gives 0 * inf = nan at self 0);
    # its self.pow(exponent - 1) is pow.Tensor_Scalar (sqrt / rsqrt at ±0.5), the tensor
    # overload's pow.Tensor_Tensor (IEEE pow: (-0) ** -0.5 = inf, (-inf) ** -0.5 = 0).
    k = e * (_power(jnp.where(e == 0, 1, x), e - 1) if safe else torch_pow(x, e - 1))
    return jnp.where(e == 0, 0, t * jnp.where(e == 0, 0, k))


def _pow_exp(b, e, out, t):
    return t * jnp.where((b == 0) & (e >= 0), 0, out * jnp.log(jnp.where(b == 0, 0, b)))


def _pow_scalar_jvp(primals, tangents, out):
    return _pow_self(primals[0], primals[1], tangents[0], safe=True)


def _pow_tensor_jvp(primals, tangents, out):
    (x, e), (tx, te) = primals, tangents
    return _pow_self(x, e, tx) + _pow_exp(x, e, out, _tan(te, out))


@jax.custom_jvp
def torch_pow(x, e):
    """``x ** e`` (IEEE pow) whose derivatives, at every order, are PyTorch's pow.Tensor_Tensor
    formulas: the tensor overload's stated derivative raises with it, so that double backward
    differentiates that power as PyTorch does (jax's exponent derivative is 0 at x == 0)."""
    return jnp.power(x, e)


@torch_pow.defjvp
def _torch_pow_jvp(primals, tangents):
    out = torch_pow(*primals)
    return out, _pow_tensor_jvp(primals, tangents, out)


def _rpow_jvp(primals, tangents, out):
    (e, b), (te, _) = primals, tangents
    return _pow_exp(b, e, out, te)


_pow_scalar = defop("pow_scalar", lambda x, e: _power(x, e), "PowBackward0", promote="binary",
                    jvp=_pow_scalar_jvp)
_pow_tensor = defop("pow_tensor", jnp.power, "PowBackward1", promote="binary", jvp=_pow_tensor_jvp,
                    errors={"b": (NotImplementedError, "\"pow\" not implemented for 'Bool'")})
_rpow = defop("rpow", lambda x, b: jnp.power(b, x), "PowBackward2", promote="binary", jvp=_rpow_jvp)
def _extremum_jvp(loses):
    # PyTorch: where(self == other, grad / 2, grad), zeroed where that operand loses (nan: both
    # operands keep the whole gradient, as neither comparison holds)
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        half = jnp.asarray(0.5, out.dtype)
        fx = jnp.where(x == y, half, jnp.where(loses(x, y), 0, 1).astype(out.dtype))
        fy = jnp.where(x == y, half, jnp.where(loses(y, x), 0, 1).astype(out.dtype))
        return _tan(tx, fx) * fx + _tan(ty, fy) * fy
    return jvp


def _tan(t, like):
    # the tangent of an integer operand is a float0 zero: it contributes nothing
    return jnp.zeros((), like.dtype) if t.dtype == jax.dtypes.float0 else t.astype(like.dtype)


_maximum = defop("maximum", jnp.maximum, "MaximumBackward0", promote="binary",
                 jvp=_extremum_jvp(jnp.less),
                 errors={"c": (RuntimeError, "maximum not implemented for complex tensors.")})
_minimum = defop("minimum", jnp.minimum, "MinimumBackward0", promote="binary",
                 jvp=_extremum_jvp(jnp.greater),
                 errors={"c": (RuntimeError, "minimum not implemented for complex tensors.")})


def _is_one(a) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool) and a == 1


def _check_alpha(input, other, alpha):
    if not isinstance(alpha, (int, float, bool)):
        raise TypeError("alpha must be a Python number")


@export("add", operands=("input", "other"))
def add(input, other, *, alpha=1, out=None) -> Tensor:
    """``input + alpha * other`` with broadcasting and PyTorch's type promotion.

    >>> import funcgrad
    >>> funcgrad.add(funcgrad.tensor([1, 2]), 1.5)
    tensor([2.5000, 3.5000])
    """
    if not isinstance(input, Tensor):  # add(2, t)
        input, other = other, input
    r = _add._call2(input, other) if type(alpha) is int and alpha == 1 else _add._call2(input, other, alpha)
    return r if out is None else _out(r, out)


@export("sub", "subtract", operands=("input", "other"))
def sub(input, other, *, alpha=1, out=None) -> Tensor:
    """``input - alpha * other``."""
    _no_bool_sub(input, other)
    op, x, y = (_sub, input, other) if isinstance(input, Tensor) else (_rsub, other, input)
    r = op._call2(x, y) if type(alpha) is int and alpha == 1 else op._call2(x, y, alpha)
    return r if out is None else _out(r, out)


def _no_bool_sub(a, b) -> None:
    """PyTorch refuses subtraction with a bool tensor operand (its message names the fix)."""
    ab = isinstance(a, Tensor) and a._value.dtype == np.bool_  # (the array's: no dtype object)
    bb = isinstance(b, Tensor) and b._value.dtype == np.bool_
    if ab and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if ab or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


@export("rsub")
def rsub(input, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``."""
    _no_bool_sub(input, other)
    if type(alpha) is int and alpha == 1:  # (the two-operand kernel: see _with_alpha)
        return _rsub._call2(input, other)
    return _rsub._call2(input, other, alpha)


@export("mul", "multiply", operands=("input", "other"))
def mul(input, other, *, out=None) -> Tensor:
    """Elementwise product."""
    if not isinstance(input, Tensor):
        input, other = other, input
    r = _mul._call2(input, other)
    return r if out is None else _out(r, out)  # (no call when out is None: `a * b` is a hot path)


@export("div", "divide", "true_divide", operands=("input", "other"))
def div(input, other, *, rounding_mode=None, out=None) -> Tensor:
    """Division; ``rounding_mode`` None (true division), ``'trunc'`` or ``'floor'``."""
    if not isinstance(input, Tensor):
        input = tensor(input)
    if rounding_mode is None:
        # bool operands are made float first: inside one kernel XLA folds bool-to-float into the
        # division as a select, which gives 0 for False / False (PyTorch: nan)
        if input._value.dtype == np.bool_:  # (the array's dtype: no dtype object made)
            input = input.to(_dtype.get_default_dtype())
        if isinstance(other, Tensor) and other._value.dtype == np.bool_:
            other = other.to(_dtype.get_default_dtype())
        r = apply(_div, input, other)
    elif rounding_mode == "floor":
        r = apply(_div_floor, input, other)
    elif rounding_mode == "trunc":
        r = apply(_div_trunc, input, other)
    else:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                           f"found '{rounding_mode}'")
    return _out(r, out)


@export("floor_divide")
def floor_divide(input, other, *, out=None) -> Tensor:
    # (PyTorch's floor_divide.out has no derivative: out= takes an input requiring grad)
    return _out(div(input, other, rounding_mode="floor"), out, refuse_grad=False)


@export("remainder")
def remainder(input, other, *, out=None) -> Tensor:
    """Python-style modulus (sign of the divisor), as ``%``."""
    if not isinstance(input, Tensor):
        input = tensor(input)
    return _out(apply(_remainder if isinstance(other, Tensor) else _remainder_s, input, other), out)


@export("pow")
def pow(input, exponent, *, out=None) -> Tensor:
    """``input ** exponent``: ``PowBackward0`` for a scalar exponent, ``PowBackward1`` for a tensor."""
    if not isinstance(input, Tensor):
        return _out(apply(_rpow, exponent, input), out)
    if isinstance(exponent, Tensor):
        return _out(apply(_pow_tensor, input, exponent), out)
    return _out(apply(_pow_scalar, input, exponent), out)


@export("float_power")
def float_power(input, exponent) -> Tensor:
    input = input.to(float64) if isinstance(input, Tensor) else input
    exponent = exponent.to(float64) if isinstance(exponent, Tensor) else exponent
    return pow(input, exponent)


@export("maximum", tensors=("input", "other"))
def maximum(input, other, *, out=None) -> Tensor:
    """Elementwise max; on ties the gradient is split in half between the inputs (as PyTorch)."""
    return _out(apply(_maximum, input, other), out)


@export("minimum", tensors=("input", "other"))
def minimum(input, other, *, out=None) -> Tensor:
    return _out(apply(_minimum, input, other), out)


def _raw(f):
    """A frontend without its argument-checking wrapper (``export``'s ``operands``): the dunders
    decide their operand themselves."""
    return getattr(f, "__wrapped__", f)


for _n, _f in [("add_", add), ("sub_", sub), ("subtract_", sub), ("mul_", mul),
               ("multiply_", mul), ("div_", div), ("divide_", div), ("true_divide_", div),
               ("floor_divide_", floor_divide), ("remainder_", remainder), ("pow_", pow)]:
    # (add_/sub_/mul_/div_: PyTorch's one-overload parser error for a non-operand, as add's)
    inplace_method(_n, _raw(_f), operands=("other",) if _n in ("add_", "sub_", "mul_", "div_") else ())


def _swap(f):
    def r(self, other):
        return f(other, self)
    return r


# ---- the arithmetic dunders' other operand ----------------------------------------------------
# anything else is ``_registry.operand``'s: a NumPy number as its Python number, the rest
# ``NotImplemented``, which the dunder returns. Python then tries the other operand's reflected
# method (an ndarray's: NumPy computes it, as with PyTorch), or raises its ``unsupported operand
# type(s) for +: 'Tensor' and 'str'``
_PLAIN = frozenset((Tensor, int, float, bool))  # taken as they are, checked by one set lookup


def _dunder(f):
    def d(self, other):
        if type(other) not in _PLAIN and (other := operand(other)) is NotImplemented:
            return NotImplemented
        return f(self, other)
    d.__name__ = d.__qualname__ = f.__name__
    return d


def _rtruediv(self, other):
    if type(other) not in _PLAIN:
        o = operand(other)
        if o is NotImplemented:
            # PyTorch's __rtruediv__ is ``self.reciprocal() * other`` (torch/_tensor.py): an array's is
            # NumPy's product (the Tensor's __mul__ declines it), as a Tensor
            return self.reciprocal() * other if isinstance(other, np.ndarray) else NotImplemented
        other = o
    return apply(_rdiv, self, other)


def _operator(op):
    """``x + y``, ``x * y`` (and reflected: the ops commute): the op's binary caller itself, its
    fast path first (no frame of an operator in between), declining what PyTorch's operator
    declines once that path does not apply."""
    return binary_caller(op, _dunder(lambda self, other: apply(op, self, other)))


_add_dunder = _operator(_add)  # add(self, other) without its keywords (alpha 1)
_mul_dunder = _operator(_mul)


for _n, _f in [("__add__", _add_dunder), ("__radd__", _add_dunder), ("__sub__", _dunder(_raw(sub))),
               ("__rsub__", _dunder(_swap(_raw(sub)))), ("__mul__", _mul_dunder), ("__rmul__", _mul_dunder),
               ("__truediv__", _dunder(_raw(div))), ("__rtruediv__", _rtruediv),
               ("__floordiv__", _dunder(floor_divide)), ("__rfloordiv__", _dunder(_swap(floor_divide))),
               ("__mod__", _dunder(remainder)), ("__rmod__", _dunder(_swap(remainder))),
               ("__pow__", _dunder(pow)), ("__rpow__", _dunder(_swap(pow)))]:
    export(_n, function=False)(_f)
for _n, _m in [("__iadd__", "add_"), ("__isub__", "sub_"), ("__imul__", "mul_"),
               ("__itruediv__", "div_"), ("__ifloordiv__", "floor_divide_"),
               ("__imod__", "remainder_"), ("__ipow__", "pow_")]:
    from ._registry import METHODS as _M
    # (NotImplemented: Python's ``unsupported operand type(s) for +=``, self unchanged)
    export(_n, function=False)(_dunder(_M[_m]))

# ================================ comparisons and logic (never differentiable) ===================
_CMP = [("eq", jnp.equal, "__eq__"), ("ne", jnp.not_equal, "__ne__"), ("lt", jnp.less, "__lt__"),
        ("le", jnp.less_equal, "__le__"), ("gt", jnp.greater, "__gt__"),
        ("ge", jnp.greater_equal, "__ge__")]
_ALIASES = {"ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
            "ge": "greater_equal"}


def _make_cmp(name, op, arrays=False, dunder=False):
    """The function/method ``name`` (frameless: a refused call is PyTorch's parser's TypeError, see
    ``_parser.rerun``) or, ``dunder``, its operator (NotImplemented, Python's TypeError)."""
    bitwise = op.promote != "compare"
    check = cast_dtype if bitwise else any_dtype

    def other_operand(other):  # (off the hot path: other not a Tensor nor a Python number)
        if arrays and isinstance(other, np.ndarray):
            try:  # (PyTorch's __eq__ alone takes a NumPy array, as the tensor from_numpy makes of it)
                return from_numpy(other)
            except TypeError:
                return NotImplemented
        if bitwise and isinstance(other, np.bool_):
            # (PyTorch's parser reads a NumPy bool as a double Scalar: tb & np.bool_(True) is a
            # float operand, its kernel's NotImplementedError)
            return float(other)
        # a NumPy number as its Python number (its ufunc defers to the Tensor: np.int64(2) < t)
        return operand(other)

    if dunder:
        def f(input, other, *, out=None) -> Tensor:
            if not isinstance(other, (Tensor, int, float, bool, complex)):
                other = other_operand(other)
                if other is NotImplemented:
                    return NotImplemented
            return _out(apply(op, input, other), out, name, check)
    else:
        def f(input=REQUIRED, other=REQUIRED, *args, out=None, **numpy) -> Tensor:
            if args or numpy:  # (NumPy's names, more arguments, out= to the method: as PyTorch's parser)
                return rerun(f)
            try:
                if not isinstance(other, (Tensor, int, float, bool, complex)):
                    o = other_operand(other)
                    if o is NotImplemented:
                        raise TypeError(f"{name}(): argument 'other' must be Tensor or Number, not "
                                        f"{type_name(other)}")
                    return _out(apply(op, input, o), out, name, check)
                return _out(apply(op, input, other), out, name, check)
            except TypeError:  # (PyTorch's, where its parser refuses the call)
                refuse(f)
                raise
        f.__code__ = f.__code__.replace(co_name=name, co_qualname=name)  # (the op refuse names)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` comparison → bool tensor."
    return f


def _cmp_host(np_fn):
    def host(a, b):
        host_exact(a, b, reads=True)
        return np_fn(a, b)
    return host


# (lt/le/gt/ge refuse complex before any kernel or twin runs: accepts, PyTorch's error)
_CMP_HOST = {"eq": (np.equal, False), "ne": (np.not_equal, False), "lt": (np.less, True),
             "le": (np.less_equal, True), "gt": (np.greater, True), "ge": (np.greater_equal, True)}
for _name, _fn, _dunder in _CMP:
    _np_fn, _ordered = _CMP_HOST[_name]
    _op = defop(_name, _fn, None, promote="compare", host=_cmp_host(_np_fn),
                accepts="bif" if _ordered else None, kernel=_name + "_cpu")
    _f = _make_cmp(_name, _op)
    globals()[_name] = export(_name, *([_ALIASES[_name]] if _name in _ALIASES else []))(_f)
    export(_dunder, function=False)(_make_cmp(_name, _op, arrays=_name == "eq", dunder=True))
    inplace_method(_name + "_", _f)
    if _name in _ALIASES:  # (export's copy: its code names the alias in PyTorch's messages)
        globals()[_ALIASES[_name]] = FUNCTIONS[_ALIASES[_name]]

_BITWISE = [("bitwise_and", jnp.bitwise_and, "__and__"), ("bitwise_or", jnp.bitwise_or, "__or__"),
            ("bitwise_xor", jnp.bitwise_xor, "__xor__")]
for _name, _fn, _dunder in _BITWISE:
    _op = defop(_name, _fn, None, promote="binary", accepts="bi", kernel=_name + "_cpu")
    _f = globals()[_name] = export(_name)(_make_cmp(_name, _op))
    export(_dunder, "__r" + _dunder[2:], function=False)(_make_cmp(_name, _op, dunder=True))
    inplace_method(_name + "_", _f)
    export("__i" + _dunder[2:], function=False)(lambda self, o, _n=_name: self._inplace(globals()[_n], o))

_not = defop("bitwise_not", jnp.invert, None, accepts="bi", kernel="bitwise_not_cpu")


@export("bitwise_not", noargs=noargs_method(op=_not))
def bitwise_not(input) -> Tensor:
    return apply(_not, input)


@export("__invert__", function=False)
def _invert(input) -> Tensor:
    # ``~x`` is checked by PyTorch's Python binding before the kernel
    if input.dtype._kind not in "bi":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return apply(_not, input)


# ================================ clamp and where ================================================
def _clamp(x, lo, hi):
    # where-based so that the gradient passes at the boundary, as PyTorch's does
    if lo is not None:
        x = jnp.where(x < lo, jnp.asarray(lo, x.dtype), x)
    if hi is not None:
        x = jnp.where(x > hi, jnp.asarray(hi, x.dtype), x)
    return x


def _clamp_jvp(primals, tangents, out):
    # PyTorch: grad * ((self >= min) & (self <= max)): the bounds pass it, nan does not
    x, lo, hi = (list(primals) + [None, None])[:3]
    keep = jnp.ones(x.shape, bool)
    if lo is not None:
        keep = keep & (x >= lo)
    if hi is not None:
        keep = keep & (x <= hi)
    return jnp.where(keep, tangents[0], jnp.zeros_like(tangents[0]))


_CLAMP_DTYPES = dict(errors={"b": (NotImplementedError, "\"clamp_scalar_cpu\" not implemented for 'Bool'"),
                             "c": CLAMP_COMPLEX})
_clamp_s = defop("clamp", _clamp, "ClampBackward1", promote="binary", diff=(0,), jvp=_clamp_jvp,
                 **_CLAMP_DTYPES)
_clamp_min_s = defop("clamp_min", lambda x, lo: _clamp(x, lo, None), "ClampMinBackward0",
                     promote="binary", diff=(0,), jvp=_clamp_jvp, **_CLAMP_DTYPES)
_clamp_max_s = defop("clamp_max", lambda x, hi: _clamp(x, None, hi), "ClampMaxBackward0",
                     promote="binary", diff=(0,), jvp=lambda p, t, o: _clamp_jvp((p[0], None, p[1]), t, o),
                     **_CLAMP_DTYPES)


def scalar_bounds_dtype(input, *bounds):
    """``input`` in the dtype PyTorch's clamp with Python-number bounds computes in: the bounds
    take part in the type promotion (an integer tensor clamped by a float is float32)."""
    if input.dtype._kind in "fc":  # a number bound never changes a floating dtype
        return input
    dt = _dtype.result_type([(input.dtype, 2 if input.ndim else 1)] +
                            [(_dtype.scalar_dtype(b), 0) for b in bounds if b is not None])
    return input if dt is input.dtype else input.to(dt)


def _clamp_tensor(x, lo, hi, *, bad):
    if lo is not None:
        x = jnp.maximum(x, lo)
    return x if hi is None else jnp.minimum(x, hi)


def _clamp_tensor_jvp(primals, tangents, out, *, bad):
    # PyTorch's clamp.Tensor formulas: self: grad where min <= self <= max; min: where self < min
    # (and min < max); max: where self > max (or max < min)
    if bad is not None:  # PyTorch's backward raises for these shapes (see _clamp_backward_error)
        raise RuntimeError(bad)
    (x, lo, hi), (tx, tlo, thi) = primals, tangents
    keep = jnp.ones(jnp.shape(x), bool)
    r = 0
    if lo is not None:
        keep = keep & (x >= lo)
        r = r + jnp.where((x < lo) & (True if hi is None else lo < hi), _tan(tlo, out), 0)
    if hi is not None:
        keep = keep & (x <= hi)
        r = r + jnp.where((x > hi) | (False if lo is None else hi < lo), _tan(thi, out), 0)
    return (r + jnp.where(keep, _tan(tx, out), 0)).astype(out.dtype)


_clamp_t = defop("clamp_tensor", _clamp_tensor, "ClampBackward0", promote="binary", jvp=_clamp_tensor_jvp,
                 errors={"c": CLAMP_COMPLEX})


def _clamp_backward_error(x, lo, hi):
    """PyTorch's clamp(min=T, max=T) backward combines its masks in place (``logical_and_`` /
    ``logical_or_``): where a mask would have to grow by broadcasting, its backward raises."""
    infer_size_all((x.shape, lo.shape, hi.shape))  # (the forward's error first: self, min, max)
    a, b, c = infer_size(x.shape, lo.shape), infer_size(x.shape, hi.shape), infer_size(lo.shape, hi.shape)
    for t, mask, other in ((x, a, b), (lo, a, c), (hi, b, c)):
        full = infer_size(mask, other)
        if t._requires_grad and full != mask:
            return f"output with shape {list(mask)} doesn't match the broadcast shape {list(full)}"
    return None


@export("clamp", "clip")
def clamp(input, min=None, max=None, *, out=None) -> Tensor:
    """Clamp into ``[min, max]``; the gradient passes where ``min <= x <= max`` (PyTorch's rule)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        bad = None
        if isinstance(min, Tensor) and isinstance(max, Tensor):
            bad = _clamp_backward_error(input, min, max)
        r = apply(_clamp_t, input, min, max, bad=bad)
    else:  # clamp(min=v) and clamp(max=v) too: ClampBackward1 (x.clamp_min(v) is ClampMinBackward0)
        r = apply(_clamp_s, scalar_bounds_dtype(input, min, max), min, max)
    return _out(r, out)


# PyTorch's in-place clamp with number bounds refuses a floating result with the C++ name of
# self's type (its structured kernel's check); with tensor bounds, the ScalarType name (Long)
inplace_method("clamp_", clamp, c_type_cast=True)
inplace_method("clip_", clamp, c_type_cast=True)

def _where_host(c, x, y):
    host_exact(x, y)
    return np.where(c, x, y)


_where = defop("where", jnp.where, "WhereBackward0", promote="binary", diff=(1, 2), host=_where_host)


def _where_out(r, o):
    if r.dtype is not o.dtype:
        return f"Expected out type to be {_scalar_type_name(r.dtype)} but got {_scalar_type_name(o.dtype)}"
    return None


@export("where")
def where(condition, input=None, other=None, *, out=None):
    """``where(cond, x, y)`` picks from x where cond else y; ``where(cond)`` is ``nonzero(as_tuple=True)``."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if isinstance(condition, Tensor) and condition.dtype.name != "bool":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition.dtype.name.capitalize()}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = tensor(input)
    return _out(apply(_where, condition, input, other), out, check=_where_out)


def _tensor_where(self, condition, y):
    return where(condition, self, y)


export("where", function=False)(_tensor_where)
