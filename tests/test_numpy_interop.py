"""NumPy on Tensors as on PyTorch's (torch/_tensor.py's ``__array_priority__`` and
``__array_wrap__``, python_variable_methods.cpp's ``__eq__``): a NumPy ufunc of a Tensor gives a
Tensor (a bool result as uint8, a scalar as a 0-d Tensor), ``t + array`` is NumPy's sum as a Tensor
(NumPy's promotion: float32 + float64 is float64), ``array + t`` is refused (NumPy defers to the
Tensor, whose reflected operators take no array: Python's TypeError; but ``array / t`` is
``t.reciprocal() * array``, PyTorch's ``__rtruediv__``, NumPy's product), a NumPy number is a number
on either side, and ``t == array`` alone compares in PyTorch (``t < array`` is refused).

Each row is one expression; its outcome (the result's type, dtype, shape and values, or the
exception type and message, PyTorch's ``torch.`` read as ``funcgrad.``) is recorded from PyTorch
2.13 in ``tests/fixtures/numpy_interop/outcomes.json`` by
``tests/fixtures/numpy_interop/make_fixtures.py`` and compared live with PyTorch where it is
installed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ._rows import Recorded, run

# ``t`` float32 (2,), ``ti`` int64, ``tb`` bool, ``s`` a 0-d float32, ``tg`` requiring grad
ROWS = [
    # ufuncs of a Tensor
    "np.exp(t)", "np.exp(ti)", "np.exp(s)", "np.sqrt(ti)", "np.isnan(t)", "np.modf(t)", "np.frexp(t)",
    "np.add(t, t)", "np.add(t, 1.5)", "np.maximum(t, np.ones(2))", "np.matmul(t, t)", "np.exp(t[None])",
    "np.negative(ti)", "np.logical_not(tb)",
    # NumPy functions that fall back on the ufuncs (the Tensor method refusing NumPy's out=)
    "np.argmax(t)", "np.cumsum(t)",
    # a Tensor and an array: the Tensor's operators take none, NumPy's reflected ones compute
    "t + np.ones(2)", "t - np.ones(2, np.float32)", "t * np.ones(2, np.int64)", "t / np.ones(2)",
    "t ** np.ones(2)", "t // np.ones(2)", "t % np.ones(2)", "t @ np.ones(2)", "tb & np.ones(2, bool)",
    "tb | np.ones(2, bool)", "ti << np.ones(2, np.int64)", "t + np.array(1.0)",
    # an array and a Tensor: NumPy defers, the Tensor refuses
    "np.ones(2) + t", "np.array(1.0) + t", "np.ones(2) * t", "np.ones(2) - t", "np.ones(2) // t",
    "np.ones(2) % t", "np.ones(2) ** t", "np.ones(2) @ t", "np.ones(2, bool) & tb", "np.ones(2) < t",
    "np.ones(2) / t", "np.array(2.0) / s",
    # comparisons: __eq__ takes an array as a tensor, the others none
    "t == np.ones(2)", "t == np.ones(2, np.int64)", "np.ones(2) == t", "t == np.ones((2, 2))",
    "tg == np.ones(2)", "t != np.ones(2)", "t >= np.ones(2)",
    # NumPy numbers on either side
    "np.float64(2.0) + t", "np.int64(2) - t", "np.float32(2.0) * t", "np.float64(2.0) ** t",
    "np.float64(2.0) < t", "np.int64(2) < t", "t < np.int64(2)", "t.eq(np.int64(1))",
    # a Tensor requiring grad is no array (PyTorch's __array__ is numpy()'s: its RuntimeError)
    "np.asarray(tg)", "np.array(tg)", "tg.__array__()", "tg.__array__(np.float64)", "tg.__array__(dtype=np.int64)",
    "np.exp(tg)", "np.add(tg, 1)", "tg + np.ones(2)", "tg * np.ones(2)", "np.asarray(tg.detach())",
    # a comparison's or bitwise op's function or method takes no array (nor list, str, None): the parser's
    # TypeError; its operator declines (Python's TypeError)
    "t.eq(np.ones(2))", "t.ne(np.ones(2))", "t.not_equal(np.ones(2))", "t.lt(np.ones(2))",
    "t.greater(np.ones(2))",
    "funcgrad.eq(t, np.ones(2))", "funcgrad.greater(t, np.ones(2))", "funcgrad.less_equal(t, [1.0, 2.0])",
    "t.eq(other=np.ones(2))", "t.eq(x2=t)", "t.le('a')", "t.eq(None)", "t.eq([1.0, 2.0])",
    "t.eq(np.float64(1.0))",
    "tb.bitwise_and(np.ones(2, bool))", "funcgrad.bitwise_or(tb, np.ones(2, bool))", "t.bitwise_xor('a')",
    "t < 'a'", "tb & 'a'", "tb.logical_and(np.ones(2, bool))", "t.add(np.ones(2))",
    # a NumPy bool is a double Scalar to a bitwise op (its kernel's NotImplementedError)
    "tb & np.bool_(True)", "tb | np.bool_(False)", "tb ^ np.bool_(True)", "np.bool_(True) & tb",
    "tb.bitwise_and(np.bool_(True))", "funcgrad.bitwise_or(tb, np.bool_(True))", "ti & np.bool_(True)",
    "tb & True", "tb == np.bool_(True)",
    # a NumPy number is PyTorch's Python number: an integer an int, a complex128 a complex, any other a
    # double (np.bool_ is 1.0: float results)
    "ti + np.bool_(True)", "tb + np.bool_(True)", "np.bool_(True) + ti", "funcgrad.add(ti, np.bool_(True))",
    "tb.mul(np.bool_(True))", "ti.mul(np.bool_(False))", "ti * np.float16(1.5)", "(t + np.complex128(1j)).imag",
    "ti.add(np.uint8(3))", "tb + np.int8(2)", "tb.sub(np.bool_(True))",
]


def _env(L):
    return {"np": np, "funcgrad": L,
            "t": L.tensor([1.0, 2.0]), "ti": L.tensor([1, 2]), "tb": L.tensor([True, False]),
            "s": L.tensor(3.0), "tg": L.tensor([1.0, 2.0], requires_grad=True)}


def _desc(r):
    if isinstance(r, tuple):
        return [_desc(v) for v in r]
    dtype = str(getattr(r, "dtype", None)).split(".")[-1]
    vals = np.asarray(r.tolist() if hasattr(r, "tolist") else r, dtype=float)
    return [type(r).__name__, dtype, list(np.shape(vals)), np.round(vals, 5).tolist()]


def _run(L, expr):
    with warnings.catch_warnings():
        # (NumPy 2 calls PyTorch's one-argument __array_wrap__ with a DeprecationWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return run(L, expr, _env(L), lambda r, env: [_desc(r)])


RECORDED = Recorded("numpy_interop", ROWS, _run)
outcomes = RECORDED.outcomes


@pytest.mark.parametrize("expr", ROWS)
def test_as_pytorch(expr):
    RECORDED.check(expr)
