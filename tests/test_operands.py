"""The arithmetic operators' other operand, as PyTorch's argument parser takes it: a Tensor or a
number (Python's, or a NumPy scalar as its Python number); anything else makes the dunder return
``NotImplemented``, so Python tries the other operand's reflected method (an ndarray's: NumPy
computes the result) and otherwise raises its own ``unsupported operand type(s)`` TypeError (the
messages themselves: tests/test_errors_torch.py)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import funcgrad

_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
        operator.mod, operator.pow]
_OPERANDS = {
    "np.int64": np.int64(3), "np.float32": np.float32(2.5), "np.float64": np.float64(-1.25),
    "np.bool_": np.bool_(True), "np.int8": np.int8(-2),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", list(_OPERANDS))
@pytest.mark.parametrize("op", _OPS, ids=[f.__name__ for f in _OPS])
def test_numpy_operands_as_torch(op, name):
    torch = pytest.importorskip("torch")
    other = _OPERANDS[name]
    got = op(funcgrad.tensor([1.0, 4.0, -3.0]), other)
    want = op(torch.tensor([1.0, 4.0, -3.0]), other)
    assert isinstance(got, funcgrad.Tensor)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.torch
@pytest.mark.parametrize("name", list(_OPERANDS))
@pytest.mark.parametrize("form", ["add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_"])
def test_numpy_numbers_in_the_function_and_method_forms_as_torch(form, name):
    torch = pytest.importorskip("torch")
    other = _OPERANDS[name]

    def run(lib):
        x = lib.tensor([1.0, 4.0, -3.0])
        r = getattr(x, form)(other) if form.endswith("_") else getattr(lib, form)(x, other)
        return r.numpy(), str(r.dtype).split(".")[-1]
    got, want = run(funcgrad), run(torch)
    assert got[1] == want[1]
    np.testing.assert_array_equal(got[0], want[0])


def test_an_ndarray_operand_is_numpys_to_compute():
    # PyTorch's dunder declines an ndarray too: NumPy's reflected method computes with the tensor's
    # values (its own promotion: float32 and int32 give float64)
    x = funcgrad.tensor([1.0, 4.0, -3.0])
    assert x.__add__(np.ones(3)) is NotImplemented
    got = x + np.array([1, 2, 3], np.int32)
    np.testing.assert_array_equal(np.asarray(got), [2.0, 6.0, 0.0])
    assert np.asarray(got).dtype == np.float64


class _Reflected:
    """A user type whose reflected operators Python must reach: the tensor's dunder declines."""

    def __radd__(self, other):
        return ("radd", type(other).__name__)

    def __rmatmul__(self, other):
        return ("rmatmul", type(other).__name__)

    def __rpow__(self, other):
        return ("rpow", type(other).__name__)


def test_a_foreign_operand_reaches_its_reflected_method():
    x = funcgrad.ones(2)
    assert x + _Reflected() == ("radd", "Tensor")
    assert x @ _Reflected() == ("rmatmul", "Tensor")
    assert x ** _Reflected() == ("rpow", "Tensor")


@pytest.mark.parametrize("bad", ["a", None, [1.0, 2.0], (1.0,), object()])
def test_a_foreign_operand_is_declined_and_nothing_changes(bad):
    x = funcgrad.ones(2, requires_grad=True)
    y = x * 1
    for op in _OPS + [operator.matmul]:
        assert getattr(y, f"__{op.__name__}__")(bad) is NotImplemented
        with pytest.raises(TypeError):  # (y * "a": str's repetition asks y.__index__, as in PyTorch)
            op(y, bad)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+=: 'Tensor'"):
        y += bad
    assert y._version == 0 and y.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("jit", [False, True])
def test_ints_past_int64_and_uint64_raise_as_torch(jit):
    def f(x, v):
        return x + v
    g = (lambda x, v: funcgrad.jit(lambda x: f(x, v))(x)) if jit else f
    x = funcgrad.ones(2)
    with pytest.raises(OverflowError, match="^int too big to convert(\n|$)"):
        g(x, 2 ** 70)
    with pytest.raises(OverflowError, match="^can.t convert negative int to unsigned(\n|$)"):
        g(x, -2 ** 63 - 1)
    assert g(x, -2 ** 63).tolist() == [-2.0 ** 63] * 2
