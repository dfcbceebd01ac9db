"""Dtype and operand errors of the op table (``defop``'s accepts/kernel/errors and ``export``'s
``tensors=``) against live PyTorch: each row runs one call on ``torch`` and on ``funcgrad`` for
every dtype, and both must succeed, or raise the same exception type with the same message; a
refused in-place call leaves its tensor unchanged (value and version).
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional  # noqa: F401

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

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
    "clamp_float_bounds": lambda L, x: x.clamp(0.5, 2.0), "clamp_bool_bounds": lambda L, x: x.clamp(False, True),
    "clamp_min_float": lambda L, x: x.clamp_min(0.5),
    "div_floor_zero": lambda L, x: x // L.zeros(3, dtype=x.dtype), "remainder": lambda L, x: x % x,
    "fmod_zero": lambda L, x: L.fmod(x, 0), "pow_tensor": lambda L, x: x ** x,
    "bitwise_and_scalar": lambda L, x: x & 1, "hypot": lambda L, x: L.hypot(x, x),
    "logaddexp2": lambda L, x: L.logaddexp2(x, x),
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
}


def _outcome(L, call, x):
    try:
        call(L, x)
    except Exception as e:  # noqa: BLE001 - the type and message are what the test compares
        return type(e).__name__, str(e).replace("torch.", "funcgrad.")
    return "ok", None


def _ones(L, dtype):
    return L.ones(2, 3).to(getattr(L, dtype))


@pytest.mark.parametrize("name", list(UNARY))
def test_dtype_errors_match_torch(name):
    call = UNARY[name]
    for dt in DTYPES:
        want = _outcome(torch, call, _ones(torch, dt))
        got = _outcome(funcgrad, call, _ones(funcgrad, dt))
        assert got == want, (name, dt)


@pytest.mark.parametrize("name", list(OTHER))
def test_operand_errors_match_torch(name):
    def x(L):
        return L.ones(2, 3, requires_grad=name == "clamp_backward_shapes")
    want = _outcome(torch, OTHER[name], x(torch))
    assert want[0] != "ok", "the row must make PyTorch raise"
    assert _outcome(funcgrad, OTHER[name], x(funcgrad)) == want


@pytest.mark.parametrize("call", [lambda x: x.abs_(), lambda x: x.neg_(), lambda x: x.floor_(),
                                  lambda x: x.clamp_(False, True), lambda x: x.bitwise_and_(1.5)])
def test_refused_inplace_leaves_tensor_unchanged(call):
    x = funcgrad.tensor([True, False, True])
    v = x._version
    with pytest.raises((RuntimeError, NotImplementedError)):
        call(x)
    assert x._version == v
    assert np.array_equal(x.numpy(), [True, False, True])
