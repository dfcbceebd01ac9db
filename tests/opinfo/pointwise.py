"""Edge-value samples for pointwise ops: ±0, ties, ±inf, nan, huge/tiny (``EDGE``), through a
transposed (non-contiguous) view, float32, 0-d, empty, int64 and bool inputs, broadcasting and
Python-scalar operands. Each op key maps to the user-level call (``lib`` = funcgrad or torch)."""

from __future__ import annotations

import numpy as np

from . import EDGE, VEC, Py, Sample, View, bools, ints, rand

_E44 = EDGE.reshape(4, 4)
# float32's huge/tiny: near its max and near its smallest normal (XLA's CPU kernels flush
# subnormals to zero, PyTorch's do not: a platform difference, see the README); the 16 values
# tiled to VEC elements (4x16), so PyTorch's vectorized loop computes every one on any CPU
_E44_32 = np.tile(np.where(np.abs(_E44) == 1e300, np.sign(_E44) * 3e38,
                           np.where(_E44 == 1e-300, 2e-38, _E44)).astype(np.float32), (1, VEC // 16))


def _unary(op, f, domain=None, skip=()):
    """The unary sample set; ``f(lib, x)``. ``domain``: extra inputs inside the op's domain."""
    out = [
        Sample(op, f, [View(_E44.T.copy())], id="edge-T"),
        Sample(op, f, [_E44_32], id="edge-f32"),
        Sample(op, f, [np.array(0.7)], id="0d"),
        Sample(op, f, [np.zeros((0, 4))], id="empty"),
        Sample(op, f, [ints(4, 4)], id="int64"),
        Sample(op, f, [bools(4, 4)], id="bool"),
    ]
    if domain is not None:
        out.append(Sample(op, f, [domain], id="domain"))
    return [s for s in out if s.id not in skip]


def _m(name):
    return lambda lib, x: getattr(lib, name)(x)


def _F(name, *a, **kw):
    return lambda lib, x: getattr(lib.nn.functional, name)(x, *a, **kw)


def _special(name):
    return lambda lib, x: getattr(lib.special, name)(x)


_UNIT = rand(4, 4, low=-0.99, high=0.99)
_POS = rand(4, 4, low=0.01, high=3.0)
_UNARY = {
    **{k: _m(k) for k in [
        "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "neg", "abs", "relu", "acos", "acosh",
        "asin", "asinh", "atan", "atanh", "ceil", "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv",
        "exp2", "expm1", "floor", "frac", "i0", "lgamma", "log10", "log1p", "log2", "rad2deg",
        "reciprocal", "round", "rsqrt", "sgn", "sign", "signbit", "sinc", "sinh", "square", "tan", "trunc",
        "isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "logical_not", "bitwise_not",
        "nan_to_num", "logit"]},
    **{f"special_{k}": _special(k) for k in ["entr", "erfcx", "i0e", "i1", "i1e", "log_ndtr", "ndtr", "ndtri"]},
    "round_decimals": lambda lib, x: lib.round(x, decimals=1),
    "gelu": _F("gelu"), "silu": _F("silu"), "mish": _F("mish"), "elu": _F("elu"), "celu": _F("celu", 2.0),
    "softplus": _F("softplus", 2.0, 3.0), "hardtanh": _F("hardtanh", -0.5, 1.0), "hardswish": _F("hardswish"),
    "hardsigmoid": _F("hardsigmoid"), "log_sigmoid": _F("logsigmoid"), "hardshrink": _F("hardshrink", 0.5),
    "softshrink": _F("softshrink", 0.5), "leaky_relu": _F("leaky_relu", 0.1),
    "threshold": _F("threshold", 0.5, -1.0),
    # the in-place forms (on a non-leaf): *Backward1 nodes, derivatives that read the result
    "elu_": lambda lib, x: lib.nn.functional.elu(x * 1, inplace=True),
    "celu_": lambda lib, x: lib.nn.functional.celu(x * 1, 2.0, inplace=True),
    "leaky_relu_": lambda lib, x: lib.nn.functional.leaky_relu(x * 1, 0.1, inplace=True),
    "threshold_": lambda lib, x: lib.nn.functional.threshold(x * 1, 0.5, -1.0, inplace=True),
    "clamp": lambda lib, x: x.clamp(-0.5, 1.0), "clamp_min": lambda lib, x: x.clamp_min(0.0),
    "clamp_max": lambda lib, x: x.clamp_max(0.0),
}
_DOMAIN = {"acos": _UNIT, "asin": _UNIT, "atanh": _UNIT, "erfinv": _UNIT, "acosh": _POS + 1.0,
           "log": _POS, "log10": _POS, "log2": _POS, "log1p": _POS, "sqrt": _POS, "rsqrt": _POS,
           "digamma": _POS, "lgamma": _POS, "logit": _POS / 3.1, "special_ndtri": _POS / 3.1}

# every pair of edge values, element by element (256 contiguous pairs, a multiple of VEC): each
# pair's own gradient is compared (a broadcast operand's gradient would sum 16 pairs, where one nan
# hides the others); broadcasting has its samples below (f32-f64, 0d-T)
_GRID_X = np.repeat(EDGE, 16).reshape(16, 16)
_GRID_Y = np.tile(EDGE, 16).reshape(16, 16)
assert _GRID_X.size % VEC == 0


def _binary(op, f, skip=()):
    out = [
        Sample(op, f, [_GRID_X, _GRID_Y], id="edge-grid"),
        Sample(op, f, [rand(3, 4, dtype=np.float32), rand(4, seed=1)], id="f32-f64"),
        Sample(op, f, [np.array(1.5), View(rand(4, 3, seed=2))], id="0d-T"),
        Sample(op, f, [ints(3, 4), ints(4, seed=1)], id="int64"),
        Sample(op, f, [ints(3, 4), rand(4, seed=1)], id="int-f64"),
        Sample(op, f, [bools(3, 4), bools(4, seed=1)], id="bool"),
        Sample(op, f, [rand(3, 4), Py(2.0)], id="scalar"),
        Sample(op, f, [ints(3, 4), Py(0.5)], id="int-pyfloat"),
        Sample(op, f, [np.zeros((0, 4)), rand(4)], id="empty"),
    ]
    return [s for s in out if s.id not in skip]


def _b(name):
    return lambda lib, x, y: getattr(lib, name)(x, y)


_BINARY = {
    "add": lambda lib, x, y: x + y, "sub": lambda lib, x, y: x - y, "mul": lambda lib, x, y: x * y,
    "div": lambda lib, x, y: x / y, "div_floor": lambda lib, x, y: lib.div(x, y, rounding_mode="floor"),
    "div_trunc": lambda lib, x, y: lib.div(x, y, rounding_mode="trunc"),
    "remainder": lambda lib, x, y: x % y, "pow_tensor": lambda lib, x, y: x ** y,
    "maximum": _b("maximum"), "minimum": _b("minimum"), "eq": lambda lib, x, y: x == y,
    "ne": lambda lib, x, y: x != y, "lt": lambda lib, x, y: x < y, "le": lambda lib, x, y: x <= y,
    "gt": lambda lib, x, y: x > y, "ge": lambda lib, x, y: x >= y,
    "bitwise_and": lambda lib, x, y: x & y, "bitwise_or": lambda lib, x, y: x | y,
    "bitwise_xor": lambda lib, x, y: x ^ y,
    **{k: _b(k) for k in ["atan2", "hypot", "fmod", "logaddexp", "logaddexp2", "xlogy", "copysign",
                          "heaviside", "logical_and", "logical_or", "logical_xor"]},
    "special_xlog1py": lambda lib, x, y: lib.special.xlog1py(x, y),
}

SAMPLES = []
for _k, _f in _UNARY.items():
    SAMPLES += _unary(_k, _f, _DOMAIN.get(_k))
for _k, _f in _BINARY.items():
    SAMPLES += _binary(_k, _f)
# scalar-operand overloads (their own op keys)
SAMPLES += [
    Sample("rsub", lambda lib, x: 2.0 - x, [View(_E44.T.copy())], id="edge-T"),
    Sample("rdiv", lambda lib, x: 3.0 / x, [View(_E44.T.copy())], id="edge-T"),
    Sample("pow_scalar", lambda lib, x: x ** 2, [View(_E44.T.copy())], id="sq-edge-T"),
    Sample("pow_scalar", lambda lib, x: x ** 0.5, [_E44.copy()], id="sqrt-edge"),
    Sample("pow_scalar", lambda lib, x: x ** -1, [_E44.copy()], id="inv-edge"),
    Sample("pow_scalar", lambda lib, x: x ** 0, [_E44.copy()], id="zero-edge"),
    Sample("pow_scalar", lambda lib, x: x ** 2, [ints(4, 4)], id="int64"),
    Sample("rpow", lambda lib, x: 2.0 ** x, [_E44.copy()], id="edge"),
    Sample("rpow", lambda lib, x: 0.0 ** x, [_E44.copy()], id="zero-base-edge"),
    Sample("fmod_tensor", lambda lib, x, y: lib.fmod(x, y), [_GRID_X, _GRID_Y], id="edge-grid"),
    Sample("copysign_scalar", lambda lib, x: lib.copysign(x, -0.0), [_E44.copy()], id="edge"),
    Sample("xlogy_scalar_other", lambda lib, x: lib.xlogy(x, 0.0), [_E44.copy()], id="edge"),
    Sample("xlogy_scalar_self", lambda lib, y: lib.xlogy(0.0, y), [_E44.copy()], id="edge"),
    Sample("clamp_tensor", lambda lib, x, lo, hi: x.clamp(lo, hi), [_GRID_X, _GRID_Y, np.array(0.5)],
           id="edge-grid"),
    Sample("clamp_min_tensor", lambda lib, x, lo: x.clamp_min(lo), [_GRID_X, _GRID_Y], id="edge-grid"),
    Sample("clamp_max_tensor", lambda lib, x, hi: x.clamp_max(hi), [_GRID_X, _GRID_Y], id="edge-grid"),
    Sample("where", lambda lib, c, x, y: lib.where(c, x, y), [bools(4, 4), _E44.copy(), np.array(0.0)],
           id="edge"),
    Sample("lerp", lambda lib, x, y: lib.lerp(x, y, 0.5), [_GRID_X, _GRID_Y], id="edge-grid"),
    Sample("lerp_tensor", lambda lib, x, y, w: lib.lerp(x, y, w), [_GRID_X, _GRID_Y, np.array(0.3)],
           id="edge-grid"),
    Sample("addcmul", lambda lib, a, x, y: lib.addcmul(a, x, y, value=0.5), [rand(16), _GRID_X, _GRID_Y],
           id="edge-grid"),
    Sample("addcdiv", lambda lib, a, x, y: lib.addcdiv(a, x, y, value=0.5), [rand(16), _GRID_X, _GRID_Y],
           id="edge-grid"),
]
