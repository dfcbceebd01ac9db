"""``mean`` gives PyTorch's CPU bits: PyTorch sums (in float32 for half types), then divides by the
count (``mean_out``: ``sum_out(...).div_(dim_prod)``), and its backward divides the gradient by
the count (``mean_backward``). XLA turns a division by a constant into a product with the
reciprocal, one ulp off where the quotient is not exact: ``x.float().mean()`` of 118 ones among
1000 gave 0.11800000816583633 where PyTorch gives 0.11800000071525574 (pytorch/examples'
mnist_forward_forward prints ``1.0 - pred.eq(y).float().mean().item()``). The inputs are small
integers, so every sum is exact and only the division is compared. Complex means are not
compared: PyTorch's vectorized complex division scales by an approximate reciprocal (its
115+194j over 7 is 16.428572+27.714287j, not the rounded 27.714285)."""

import numpy as np
import pytest

import funcgrad

DTYPES = ["float32", "float64", "float16", "bfloat16"]
CALLS = {
    "all": lambda x: x.mean(),
    "dim0": lambda x: x.mean(0),
    "dim1": lambda x: x.mean(1),
    "dims02_keepdim": lambda x: x.mean((0, 2), keepdim=True),
    "last_dtype_float64": lambda x: x.mean(-1, dtype=x.double().dtype),
}


def _run(m, dtype, call):
    rng = np.random.default_rng(0)
    data = rng.integers(-60, 61, (10, 7, 30)).astype(np.float64)
    x = m.tensor(data, dtype=getattr(m, dtype), requires_grad=True)
    y = CALLS[call](x)
    g = m.tensor(rng.standard_normal(tuple(y.shape)), dtype=y.dtype)
    y.backward(g)

    def as_np(t):  # (bfloat16 has no NumPy dtype: its values are exact in float32)
        t = t.detach()
        return (t.float() if t.dtype == m.bfloat16 else t).numpy()
    return as_np(y), as_np(x.grad), str(y.dtype).split(".")[-1], y.grad_fn.name()


@pytest.mark.torch
@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_mean_and_its_gradient_equal_torch_bit_for_bit(dtype, call):
    torch = pytest.importorskip("torch")
    fy, fg, fdt, fname = _run(funcgrad, dtype, call)
    ty, tg, tdt, tname = _run(torch, dtype, call)
    assert (fdt, fname) == (tdt, tname)
    np.testing.assert_array_equal(fy, ty)
    np.testing.assert_array_equal(fg, tg)


def test_mean_of_118_ones_among_1000_is_the_rounded_quotient():
    x = funcgrad.zeros(1000)
    x[:118] = 1
    assert x.mean().item() == float(np.float32(0.118)) == 0.11800000071525574
    assert x.view(1, 1000).mean(1).item() == 0.11800000071525574


LOSSES = {
    "mse_loss": {},
    "smooth_l1_loss": {},
    "smooth_l1_loss_beta": {"beta": 0.5},
    "huber_loss": {},
    "huber_loss_delta": {"delta": 2.0},
}


def _loss(m, name, n):
    # multiples of 1/8: every elementwise loss and every sum exact in float32
    rng = np.random.default_rng(n)
    x, y = (m.tensor(rng.integers(-20, 21, n).astype(np.float32) / 8) for _ in range(2))
    kw = LOSSES[name]
    return getattr(m.nn.functional, name.replace("_beta", "").replace("_delta", ""))(x, y, **kw).item()


@pytest.mark.torch
@pytest.mark.parametrize("n", [3, 210, 1000])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_mean_reduced_losses_equal_torch_bit_for_bit(name, n):
    # PyTorch reduces these with loss.mean(); jnp.mean's reciprocal product gave smooth_l1_loss
    # 1.286093831062317 for 1000 elements where PyTorch gives 1.2860937118530273
    torch = pytest.importorskip("torch")
    assert _loss(funcgrad, name, n) == _loss(torch, name, n)
