"""Elementwise math, reductions and sorting: PyTorch's edge-point gradients, dtype rules, errors,
non-differentiable results, ``out=`` and in-place variants (the spec table covers the rest)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import funcgrad as fg


def _grad(f, x):
    x = fg.tensor(x, requires_grad=True)
    f(x).backward()
    return x.grad.tolist()


# ---- dtype rules -----------------------------------------------------------------------------
def test_int_inputs_become_default_float_for_transcendentals():
    i = fg.tensor([1, 2])
    for f in (fg.exp2, fg.log2, fg.rsqrt, fg.erf, fg.lgamma, fg.reciprocal, fg.deg2rad, fg.tan):
        assert f(i).dtype is fg.float32, f
    assert fg.atan2(i, i).dtype is fg.float32
    assert fg.xlogy(i, i).dtype is fg.float32
    assert fg.logsumexp(i, 0).dtype is fg.float32


def test_rounding_and_sign_keep_integers():
    i = fg.tensor([-2, 3])
    for f in (fg.floor, fg.ceil, fg.trunc, fg.round, fg.sign, fg.square):
        r = f(i)
        assert r.dtype is fg.int64, f
    assert fg.square(i).tolist() == [4, 9]
    assert fg.sign(fg.tensor([True, False])).dtype is fg.bool


def test_binary_promotion():
    assert fg.fmod(fg.tensor([5]), 3).dtype is fg.int64
    assert fg.fmod(fg.tensor([5]), 3.0).dtype is fg.float32
    assert fg.fmod(fg.tensor([-5.0]), 3).tolist() == [-2.0]  # C-style: sign of the dividend
    assert fg.copysign(fg.tensor([1]), fg.tensor([-2])).dtype is fg.float32


def test_reduction_dtypes():
    assert fg.tensor([1, 2, 3]).prod().dtype is fg.int64
    assert fg.tensor([True, False]).cumsum(0).tolist() == [1, 1]
    assert fg.tensor([True, False]).cumsum(0).dtype is fg.int64
    assert fg.tensor([[1, 0], [2, 0]]).all(0).dtype is fg.bool
    assert fg.tensor([[1, 0], [2, 0]], dtype=fg.uint8).all(0).dtype is fg.uint8
    assert fg.count_nonzero(fg.tensor([[1.0, 0.0], [2.0, 0.0]])).item() == 2
    assert fg.cumsum(fg.tensor([1.0, 2.0]), 0, dtype=fg.float64).dtype is fg.float64


# ---- PyTorch's gradients at edge points --------------------------------------------------------
def test_rounding_ops_record_zero_gradient():
    x = fg.tensor([0.4, 1.6], requires_grad=True)
    for f, name in [(fg.floor, "FloorBackward0"), (fg.ceil, "CeilBackward0"),
                    (fg.round, "RoundBackward0"), (fg.trunc, "TruncBackward0"),
                    (fg.sign, "SignBackward0")]:
        y = f(x)
        assert y.grad_fn.name() == name
        (g,) = fg.autograd.grad(y.sum(), [x])
        assert g.tolist() == [0.0, 0.0]
    assert fg.round(x, decimals=1).grad_fn.name() == "RoundBackward1"


def test_abs_gradient_at_zero():
    assert _grad(lambda x: x.abs().sum(), [0.0, -1.0]) == [0.0, -1.0]
    assert str(fg.tensor([-0.0, -2.0]).abs()) == "tensor([0., 2.])"


def test_sqrt_copysign_sinc_at_zero():
    assert _grad(lambda x: x.sqrt().sum(), [0.0]) == [math.inf]
    assert _grad(lambda x: x.copysign(-1.0).sum(), [0.0, 2.0]) == [0.0, -1.0]
    assert fg.copysign(fg.tensor([0.0, -3.0]), -1.0).tolist() == [-0.0, -3.0]
    assert math.copysign(1.0, fg.copysign(fg.tensor([0.0]), -1.0).item()) == -1.0
    assert _grad(lambda x: x.sinc().sum(), [0.0]) == [0.0]


@pytest.mark.parametrize("p", [2, "fro", 1, math.inf, -math.inf, 3, 0.5])
def test_norm_gradient_at_zero_is_zero(p):
    assert _grad(lambda x: x.norm(p), [0.0, 0.0, 0.0]) == [0.0, 0.0, 0.0]


def test_std_gradient_of_constant_is_zero():
    assert _grad(lambda x: x.std(), [1.0, 1.0, 1.0]) == [0.0, 0.0, 0.0]


def test_max_ties():
    # full reduction: split evenly; per-dim: everything to the returned index
    assert _grad(lambda x: x.max(), [1.0, 3.0, 3.0]) == [0.0, 0.5, 0.5]
    assert _grad(lambda x: x.max(0).values, [1.0, 3.0, 3.0]) == [0.0, 1.0, 0.0]


def test_median_ties_and_nan():
    assert _grad(lambda x: x.median(), [1.0, 2.0, 2.0, 3.0]) == [0.0, 0.5, 0.5, 0.0]
    r = fg.tensor([3.0, 2.0, 2.0, 1.0]).median(0)
    assert (r.values.item(), r.indices.item()) == (2.0, 1)
    assert _grad(lambda x: x.median(0).values, [3.0, 2.0, 2.0, 1.0]) == [0.0, 1.0, 0.0, 0.0]
    nan = float("nan")
    assert math.isnan(fg.tensor([1.0, nan, 0.0]).median().item())
    r = fg.tensor([1.0, nan, 0.0]).median(0)
    assert math.isnan(r.values.item()) and r.indices.item() == 1
    assert fg.tensor([1.0, nan, 1.0, 3.0]).nanmedian().item() == 1.0
    assert _grad(lambda x: x.nanmedian(), [1.0, nan, 1.0, 3.0]) == [0.5, 0.0, 0.5, 0.0]


def test_prod_with_zeros():
    assert _grad(lambda x: x.prod(), [2.0, 0.0, 3.0]) == [0.0, 6.0, 0.0]
    assert _grad(lambda x: x.prod(), [2.0, 0.0, 0.0]) == [0.0, 0.0, 0.0]
    assert _grad(lambda x: x.cumprod(0).sum(), [2.0, 0.0, 3.0]) == [1.0, 8.0, 0.0]


def test_nan_to_num_and_nansum_zero_gradient_at_replaced():
    nan, inf = float("nan"), float("inf")
    assert _grad(lambda x: x.nan_to_num().sum(), [nan, inf, 1.0]) == [0.0, 0.0, 1.0]
    assert _grad(lambda x: x.nansum(), [nan, 2.0]) == [0.0, 1.0]
    r = fg.nan_to_num(fg.tensor([nan, inf, -inf]))
    assert r.tolist() == [0.0, float(np.finfo(np.float32).max), float(np.finfo(np.float32).min)]


def test_nondifferentiable_results_have_no_grad_fn():
    x = fg.tensor([1.0, -2.0], requires_grad=True)
    for r in (x.isnan(), fg.isfinite(x), fg.signbit(x), fg.logical_not(x), x.argsort(),
              fg.isclose(x, x), x.any(), (x > 0).all(), x.count_nonzero(),
              fg.logical_and(x, x), x.sort().indices, x.topk(1).indices):
        assert r.grad_fn is None and not r.requires_grad
    # PyTorch records a NotImplemented node for heaviside (its backward raises)
    h = fg.heaviside(x, fg.tensor([0.5, 0.5]))
    assert h.requires_grad and h.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        h.sum().backward()


# ---- sorting-family semantics ----------------------------------------------------------------
def test_sort_nan_and_stable_descending():
    nan = float("nan")
    r = fg.tensor([1.0, nan, 0.0]).sort()
    assert r.indices.tolist() == [2, 0, 1]
    assert fg.tensor([1.0, nan, 0.0]).sort(descending=True).indices.tolist() == [1, 0, 2]
    r = fg.tensor([1.0, 2.0, 1.0, 2.0]).sort(descending=True, stable=True)
    assert r.indices.tolist() == [1, 3, 0, 2]
    r = fg.tensor(3.0).sort()
    assert r.values.item() == 3.0 and r.indices.item() == 0


def test_mode_kthvalue_cummax_match_pytorch_examples():
    r = fg.tensor([3.0, 2.0, 2.0, 1.0, 1.0]).mode()
    assert (r.values.item(), r.indices.item()) == (1.0, 4)
    r = fg.tensor([[1.0, 2.0, 2.0, 1.0, 3.0, 3.0]]).mode()
    assert (r.values.tolist(), r.indices.tolist()) == ([1.0], [3])
    r = fg.tensor([3.0, 1.0, 2.0, 1.0]).kthvalue(2)
    assert (r.values.item(), r.indices.item()) == (1.0, 3)
    assert fg.tensor([1.0, 1.0, 0.0, 2.0, 2.0]).cummax(0).indices.tolist() == [0, 1, 1, 3, 4]
    assert fg.tensor([1.0, 1.0, 2.0, 0.0, 0.0]).cummin(0).indices.tolist() == [0, 1, 1, 3, 4]
    nan = float("nan")
    assert fg.tensor([1.0, nan, 0.0, nan]).cummin(0).indices.tolist() == [0, 1, 1, 3]
    assert _grad(lambda x: x.cummax(0).values.sum(), [1.0, 1.0, 0.0]) == [1.0, 2.0, 0.0]


def test_return_types_repr_and_fields():
    r = fg.tensor([1.0, 5.0, 3.0]).topk(2)
    assert r.values.tolist() == [5.0, 3.0] and r.indices.tolist() == [1, 2]
    v, i = r
    assert repr(r) == ("funcgrad.return_types.topk(\nvalues=tensor([5., 3.]),\n"
                       "indices=tensor([1, 2]))")
    mm = fg.aminmax(fg.tensor([3, 1, 2]))
    assert (mm.min.item(), mm.max.item()) == (1, 3)
    assert type(fg.std_mean(fg.tensor([1.0, 2.0]))) is tuple


# ---- signatures ------------------------------------------------------------------------------
def test_var_std_signatures():
    x = fg.tensor([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]])
    assert fg.allclose(x.var(True), x.var())
    assert fg.allclose(x.var(False), x.var(correction=0))
    assert x.var(0, True, True).shape == (1, 3)
    assert fg.allclose(x.std(-1), x.std(1, correction=1))
    with pytest.raises(TypeError):
        x.var(unbiased=False, correction=0)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        fg.tensor([1, 2]).std()
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom is <= 0"):
        r = fg.tensor([1.0]).std()
    assert math.isnan(r.item())


def test_negative_dims_keepdim_and_methods():
    x = fg.arange(24, dtype=fg.float64).reshape(2, 3, 4)
    assert x.prod(-1, keepdim=True).shape == (2, 3, 1)
    assert fg.logsumexp(x, -2).shape == (2, 4)
    assert x.nansum((0, -1)).shape == (3,)
    assert x.any(-1).shape == (2, 3)
    assert x.median(-2, keepdim=True).values.shape == (2, 1, 4)
    assert x.cumsum(-1)[0, 0].tolist() == [0.0, 1.0, 3.0, 6.0]
    assert fg.aminmax(x, dim=-1, keepdim=True).max.shape == (2, 3, 1)


def test_out_and_inplace_variants():
    x = fg.tensor([0.25, 4.0])
    o = fg.empty(2)
    assert fg.log2(x, out=o) is o and o.tolist() == [-2.0, 2.0]
    o2 = fg.empty(2)
    fg.cumsum(x, 0, out=o2)
    assert o2.tolist() == [0.25, 4.25]
    vals, idx = fg.empty(2), fg.empty(2, dtype=fg.int64)
    fg.sort(fg.tensor([2.0, 1.0]), out=(vals, idx))
    assert vals.tolist() == [1.0, 2.0] and idx.tolist() == [1, 0]
    y = fg.tensor([1.6, -1.6])
    assert y.floor_() is y and y.tolist() == [1.0, -2.0]
    y = fg.tensor([1.0, 2.0, 3.0])
    y.cumsum_(0)
    assert y.tolist() == [1.0, 3.0, 6.0]
    y = fg.tensor([1.0, 2.0])
    y.lerp_(fg.tensor([3.0, 4.0]), 0.5)
    assert y.tolist() == [2.0, 3.0]
    leaf = fg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.exp2_()
    assert leaf.tolist() == [1.0]
    z = leaf * 1
    z.expm1_()
    assert z.grad_fn.name() == "Expm1Backward0"


def test_predicates_and_comparisons():
    nan, inf = float("nan"), float("inf")
    x = fg.tensor([nan, inf, -inf, 1.0])
    assert x.isnan().tolist() == [True, False, False, False]
    assert fg.isposinf(x).tolist() == [False, True, False, False]
    assert fg.isclose(fg.tensor([1.0, nan]), fg.tensor([1.0, nan]), equal_nan=True).tolist() == [True, True]
    assert fg.allclose(fg.tensor([1.0]), fg.tensor([1.0 + 1e-9])) is True
    assert fg.equal(fg.tensor([1, 2]), fg.tensor([1.0, 2.0])) is True
    assert fg.equal(fg.tensor([1, 2]), fg.tensor([1, 2, 3])) is False
    assert fg.logical_xor(fg.tensor([1, 0]), fg.tensor([1, 1])).tolist() == [False, True]


# ---- errors (PyTorch's messages; inputs left unchanged) --------------------------------------
def test_errors():
    i = fg.tensor([1, 2])
    f = fg.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="\"frac_cpu\" not implemented for 'Long'"):
        i.frac()
    with pytest.raises(RuntimeError, match="\"round_cpu\" not implemented for 'Long'"):
        i.round(decimals=1)
    with pytest.raises(RuntimeError, match="\"hypot_cpu\" not implemented for 'Long'"):
        fg.hypot(i, i)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        fg.addcdiv(i, i, i)
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        fg.lerp(f, f.double(), 0.5)
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different"):
        fg.heaviside(f, i)
    with pytest.raises(RuntimeError, match="Float did not match Long"):
        f.isclose(i)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        f.topk(3)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 0"):
        f.kthvalue(0)
    with pytest.raises(RuntimeError, match=r"nanmean\(\): expected input to have floating point"):
        i.nanmean()
    with pytest.raises(RuntimeError, match=r"aminmax\(\): cannot compute aminmax over an empty"):
        fg.aminmax(fg.tensor([]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        f.cumsum(1)
    with pytest.raises(TypeError):
        fg.logsumexp(f)  # dim is required, as in PyTorch
    assert f.tolist() == [1.0, 2.0] and i.tolist() == [1, 2]


# ---- optional: against PyTorch itself --------------------------------------------------------
_TORCH_CASES = [
    ("exp2", lambda t, x: t.exp2(x)), ("log1p", lambda t, x: t.log1p(x.abs())),
    ("erfinv", lambda t, x: t.erfinv(x.tanh())), ("digamma", lambda t, x: t.digamma(x.abs() + 0.5)),
    ("round2", lambda t, x: t.round(x * 10, decimals=2)), ("frac", lambda t, x: t.frac(x * 3)),
    ("atan2", lambda t, x: t.atan2(x, x * 0.7 - 0.3)), ("xlogy", lambda t, x: t.xlogy(x, x.abs())),
    ("lerp", lambda t, x: t.lerp(x, x * 0.7 - 0.3, 0.7)), ("hypot", lambda t, x: t.hypot(x, x * 2)),
    ("prod", lambda t, x: x.prod(1)), ("std", lambda t, x: x.std(0)),
    ("var_mean", lambda t, x: t.var_mean(x, 1)[0]), ("logsumexp", lambda t, x: x.logsumexp(-1)),
    ("cumprod", lambda t, x: x.cumprod(0)), ("median", lambda t, x: x.median()),
    ("median_dim", lambda t, x: x.median(1).values), ("sort", lambda t, x: x.sort(0).values),
    ("kth", lambda t, x: x.kthvalue(2, 1).values), ("cummax", lambda t, x: x.cummax(1).values),
    ("nanmean", lambda t, x: x.nanmean(0)), ("aminmax", lambda t, x: t.aminmax(x, dim=0).max),
    ("norm3", lambda t, x: x.norm(3, dim=1)), ("logcumsumexp", lambda t, x: x.logcumsumexp(1)),
]


@pytest.mark.parametrize("name,f", _TORCH_CASES, ids=[c[0] for c in _TORCH_CASES])
def test_against_pytorch(name, f):
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(0).standard_normal((4, 5))
    xt = torch.tensor(data, requires_grad=True)
    xf = fg.tensor(data, requires_grad=True)
    yt, yf = f(torch, xt), f(fg, xf)
    np.testing.assert_allclose(yf.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert yf.grad_fn.name() == yt.grad_fn.name()
    cot = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(cot))
    yf.backward(fg.tensor(cot))
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("dt", ["float64", "bfloat16", "int64"])
def test_mode_values_match_torch_past_16_elements(dt):
    # past 16 elements PyTorch's CPU mode sorts each row with an unstable std::sort: the value is
    # defined (without nan) and equal; the index is funcgrad's last occurrence of it
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for n, hi in [(17, 2), (64, 10), (257, 4), (1, 2)]:
        x = rng.integers(0, hi, (3, n)).astype(np.float64)
        got = fg.tensor(x).to(getattr(fg, dt)).mode(-1)
        want = torch.tensor(x).to(getattr(torch, dt)).mode(-1)
        np.testing.assert_array_equal(np.asarray(got.values.double().tolist()), want.values.double().numpy())
        idx = np.asarray(got.indices.tolist())
        for row, v, i in zip(x, want.values.double().numpy(), idx):
            assert i == np.flatnonzero(row == v)[-1]
    for lib in (fg, torch):
        with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
            lib.zeros(2, 0).mode(-1)
