"""Dtype and operand errors of the op table (``defop``'s accepts/kernel/errors and ``export``'s
``tensors=``) against PyTorch: each row runs one call on ``torch`` and on ``funcgrad`` for every
dtype, and both must succeed, or raise the same exception type with the same message; a refused
in-place call leaves its tensor unchanged (value and version).

Without PyTorch the expected outcomes come from ``tests/fixtures/errors_dtype/outcomes.json``,
recorded from PyTorch 2.13 by ``tests/fixtures/errors_dtype/make_fixtures.py``.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional  # noqa: F401

try:
    import torch
except ImportError:  # the recorded outcomes stand in
    torch = None

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "errors_dtype" / "outcomes.json"

DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64", "complex64"]


def _F(name, *a):
    return lambda L, x: getattr(L.nn.functional, name)(x, *a)


# id -> call(lib, x) with x a (2, 3) tensor of ones in each dtype of DTYPES
UNARY = {
    "neg": lambda L, x: -x, "abs": lambda L, x: x.abs(), "relu": lambda L, x: L.relu(x),
    "ceil": lambda L, x: x.ceil(), "round": lambda L, x: x.round(), "frac": lambda L, x: x.frac(),
    "round_decimals": lambda L, x: L.round(x, decimals=1), "bitwise_not": lambda L, x: ~x,
    "gelu": _F("gelu"), "silu": _F("silu"), "elu": _F("elu"), "softshrink": _F("softshrink"),
    "hardtanh": _F("hardtanh", -1.0, 2.0), "leaky_relu": _F("leaky_relu"),
    "argmax": lambda L, x: x.argmax(), "median": lambda L, x: x.median(),
    "median_dim": lambda L, x: x.median(1), "topk": lambda L, x: x.topk(1),
    "kthvalue": lambda L, x: x.kthvalue(1), "logcumsumexp": lambda L, x: x.logcumsumexp(1),
    "softmax_last": lambda L, x: x.softmax(-1), "log_softmax_0": lambda L, x: x.log_softmax(0),
    "clamp_float_bounds": lambda L, x: x.clamp(0.5, 2.0),
    "clamp_bool_bounds": lambda L, x: x.clamp(False, True),
    "clamp_min_float": lambda L, x: x.clamp_min(0.5),
    "div_floor_zero": lambda L, x: x // L.zeros(3, dtype=x.dtype), "remainder": lambda L, x: x % x,
    "fmod_zero": lambda L, x: L.fmod(x, 0), "pow_tensor": lambda L, x: x ** x,
    "bitwise_and_scalar": lambda L, x: x & 1, "hypot": lambda L, x: L.hypot(x, x),
    "logaddexp2": lambda L, x: L.logaddexp2(x, x),
    "sub_scalar": lambda L, x: x - 1, "rsub_scalar": lambda L, x: 1 - x, "sub_self": lambda L, x: x - x,
    # in-place with number bounds: the cast error names self's C++ type; tensor bounds: ScalarType
    "clamp_min_inplace_float": lambda L, x: x.clamp_min_(0.5),
    "clamp_max_inplace_float": lambda L, x: x.clamp_max_(1.5),
    "clamp_min_inplace_int": lambda L, x: x.clamp_min_(1),
    "clamp_max_inplace_tensor": lambda L, x: x.clamp_max_(L.tensor(1.5)),
    "clamp_tensor_bounds": lambda L, x: x.clamp(L.tensor(0.5), L.tensor(2.0)),
    "maximum_self": lambda L, x: L.maximum(x, x), "minimum_self": lambda L, x: L.minimum(x, x),
    # ordering comparisons: PyTorch's CPU kernels refuse complex
    "lt_self": lambda L, x: x < x, "le_scalar": lambda L, x: x <= 1, "gt_self": lambda L, x: x > x,
    "ge_scalar": lambda L, x: x >= 1, "lt_float_scalar": lambda L, x: L.lt(x, 1.5),
    "eq_self": lambda L, x: x == x, "ne_scalar": lambda L, x: x != 1,
}

# calls on a float32 tensor x
OTHER = {
    "maximum_float": lambda L, x: L.maximum(x, 2.0),
    "maximum_int_kw": lambda L, x: L.maximum(x, other=2),
    "maximum_first": lambda L, x: L.maximum(2.0, x),
    "maximum_method": lambda L, x: x.maximum(2.0),
    "heaviside_values": lambda L, x: L.heaviside(x, 1.0),
    "logical_or_none": lambda L, x: L.logical_or(x, None),
    "atan2_list": lambda L, x: L.atan2(x, [1.0]),
    "argmin_empty": lambda L, x: x[:0].argmin(),
    "sum_0d_dim1": lambda L, x: x[0, 0].sum(1),
    "softmax_0d_dim-2": lambda L, x: x[0, 0].softmax(-2),
    "clamp_backward_shapes": lambda L, x: L.autograd.grad(x[:, :1].clamp(x[0], x[0, 0]).sum(), [x]),
    "clamp_inplace_int64": lambda L, x: x.long().clamp_(0.5),
    "clip_inplace_int8_max": lambda L, x: x.to(L.int8).clip_(max=1.5),
    "clamp_inplace_tensor_bound": lambda L, x: x.long().clamp_(L.tensor(0.5)),
    "logical_and_inplace_float": lambda L, x: x.logical_and_(2.0),
    "logical_or_inplace_int": lambda L, x: x.logical_or_(1),
    "logical_xor_inplace_kw": lambda L, x: x.logical_xor_(other=2.0),
}


def _outcome(L, call, x):
    try:
        call(L, x)
    except Exception as e:  # noqa: BLE001 - the type and message are what the test compares
        return type(e).__name__, str(e).replace("torch.", "funcgrad.")
    return "ok", None


def _ones(L, dtype):
    return L.ones(2, 3).to(getattr(L, dtype))


def _x(L, name):
    return L.ones(2, 3, requires_grad=name == "clamp_backward_shapes")


def outcomes(L):
    """Every row's outcome on ``L`` (``[type name, message]``; ``["ok", None]``), by row key."""
    out = {f"{n}/{dt}": list(_outcome(L, c, _ones(L, dt))) for n, c in UNARY.items() for dt in DTYPES}
    out.update({n: list(_outcome(L, c, _x(L, n))) for n, c in OTHER.items()})
    return out


def _want(key, call, x):
    if torch is None:
        return tuple(json.loads(FIXTURE.read_text())[key])
    return _outcome(torch, call, x(torch))


@pytest.mark.parametrize("name", list(UNARY))
def test_dtype_errors_match_torch(name):
    call = UNARY[name]
    for dt in DTYPES:
        want = _want(f"{name}/{dt}", call, lambda L: _ones(L, dt))
        got = _outcome(funcgrad, call, _ones(funcgrad, dt))
        assert got == want, (name, dt)


@pytest.mark.parametrize("name", list(OTHER))
def test_operand_errors_match_torch(name):
    want = _want(name, OTHER[name], lambda L: _x(L, name))
    assert want[0] != "ok", "the row must make PyTorch raise"
    assert _outcome(funcgrad, OTHER[name], _x(funcgrad, name)) == want


@pytest.mark.torch
def test_fixture_is_current():
    if torch is None:
        pytest.skip("PyTorch is not installed")
    assert json.loads(FIXTURE.read_text()) == outcomes(torch), "rerun make_fixtures.py"


@pytest.mark.parametrize("call", [lambda x: x.abs_(), lambda x: x.neg_(), lambda x: x.floor_(),
                                  lambda x: x.clamp_(False, True), lambda x: x.bitwise_and_(1.5)])
def test_refused_inplace_leaves_tensor_unchanged(call):
    x = funcgrad.tensor([True, False, True])
    v = x._version
    with pytest.raises((RuntimeError, NotImplementedError)):
        call(x)
    assert x._version == v
    assert np.array_equal(x.numpy(), [True, False, True])


# an empty non-float tensor: PyTorch's softmax/log_softmax return it in its own dtype (recorded
# from PyTorch 2.13: torch.zeros(0, 3, dtype=torch.int64).softmax(0).dtype is torch.int64)
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dt", ["int64", "bool", "uint8"])
def test_softmax_of_empty_non_float_keeps_its_dtype(fn, dt):
    want = dt if torch is None else str(getattr(getattr(torch, "zeros")(0, 3, dtype=getattr(torch, dt)),
                                                fn)(0).dtype).split(".")[1]
    got = getattr(funcgrad.zeros(0, 3, dtype=getattr(funcgrad, dt)), fn)(0)
    assert got.dtype.name == want and tuple(got.shape) == (0, 3)
