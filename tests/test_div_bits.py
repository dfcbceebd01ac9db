"""True division gives PyTorch's CPU bits (its kernel divides element by element for float32 and
float64) where the divisor is a Python number, a 0-d tensor or a tensor broadcast against the
dividend, and so does its backward's ``grad / other``. XLA turns a division by a constant or by a
broadcast into a product with the reciprocal, one ulp off where the quotient is inexact: before,
``x.sum(0) / 10`` gave -16.300001 for -163 / 10 (PyTorch: -16.3), and pytorch/examples'
normalisation ``(rand - 0.1307) / 0.3081`` differed from PyTorch's in about one element in ten."""

import numpy as np
import pytest

import funcgrad

DIVISORS = {
    "python_float": lambda m, rng, dt: 0.3081,
    "python_int": lambda m, rng, dt: 10,
    "zero_dim": lambda m, rng, dt: m.tensor(7.0, dtype=dt),
    "row": lambda m, rng, dt: m.tensor(rng.standard_normal(40) + 3, dtype=dt),
    "column": lambda m, rng, dt: m.tensor(rng.standard_normal((50, 1)) + 3, dtype=dt),
    "same_shape": lambda m, rng, dt: m.tensor(rng.standard_normal((50, 40)) + 3, dtype=dt),
}
FORMS = {
    "operator": lambda x, y: x / y,
    "method": lambda x, y: x.div(y),
    "true_divide": lambda x, y: x.true_divide(y),
    "inplace": lambda x, y: x.clone().div_(y),
}


def _run(m, dtype, divisor, form):
    rng = np.random.default_rng(0)
    dt = getattr(m, dtype)
    x = m.tensor(rng.standard_normal((50, 40)) * 30, dtype=dt, requires_grad=True)
    y = DIVISORS[divisor](m, rng, dt)
    out = FORMS[form](x, y)
    g = m.tensor(rng.standard_normal((50, 40)), dtype=dt)
    out.backward(g)
    return out.detach().numpy(), x.grad.numpy(), out.grad_fn.name()


@pytest.mark.torch
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("divisor", sorted(DIVISORS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_division_and_its_gradient_equal_torch_bit_for_bit(dtype, divisor, form):
    torch = pytest.importorskip("torch")
    fo, fg, fname = _run(funcgrad, dtype, divisor, form)
    to, tg, tname = _run(torch, dtype, divisor, form)
    assert fname == tname
    np.testing.assert_array_equal(fo, to)
    np.testing.assert_array_equal(fg, tg)


def test_sum_over_ten_divided_by_ten_is_the_rounded_quotient():
    x = funcgrad.tensor([[-163.0, 5.0]]).expand(1, 2)
    assert (x / 10).tolist() == [[float(np.float32(-16.3)), 0.5]]
    assert (funcgrad.tensor([-163.0, 1.0]) / 10)[0].item() == float(np.float32(-16.3))
