"""float32 sums, means and batch/instance/layer/group norm as accurate as PyTorch's CPU kernels.

XLA:CPU sums a float32 reduction over several axes in windows of 32 elements along each axis, one
element after another (32**3 of them per partial sum for ``x.sum((0, 2, 3))`` of an NCHW tensor),
where PyTorch keeps partial sums a few levels deep (``cascade_sum``) and batch norm accumulates its
per-channel sums in float64: funcgrad's error against a float64 reference was 15x PyTorch's for
that sum and 500x for BatchNorm2d's output on post-ReLU data (pytorch/examples' siamese_network
drifted from its first printed loss). funcgrad/_ops/_sums.py shapes the sums as PyTorch's.

Each row: the error of funcgrad's float32 result against a float64 reference (NumPy, of the same
float32 data), max |result - reference| / max |reference| per output, must be within ``FACTOR``
of PyTorch's error on the same data (or of half an ulp of the output's dtype, where PyTorch's is
smaller). PyTorch's errors are measured live where torch is installed, and recorded here (torch
2.13.0, CPU, 2 threads) so the check runs without it."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad

FACTOR = 3.0


def _data(kind, shape, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "rand":  # uniform [0, 1): every term positive
        return rng.random(shape, dtype=np.float32)
    x = rng.standard_normal(shape, dtype=np.float32)
    if kind == "relu":  # a ReLU's output: positive, a third zeros
        return np.maximum(2 * x + 0.5, 0).astype(np.float32)
    return x + np.float32(0.5)  # "randn": signed terms, a mean of 0.5


def _err(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))


def _floor(dtype):
    """Half an ulp of 1 in the output's dtype."""
    return {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}[dtype]


# ---- sum / mean -------------------------------------------------------------------------------
# id: (op, shape, dim, keepdim, dtype, data, PyTorch's recorded error)
SUMS = {
    "sum_1e6": ("sum", (10 ** 6,), None, False, "float32", "rand", 3.92e-08),
    "sum_nchw_023": ("sum", (32, 64, 56, 56), (0, 2, 3), False, "float32", "rand", 2.19e-07),
    "sum_nchw_023_keepdim": ("sum", (16, 64, 28, 28), (0, 2, 3), True, "float32", "randn", 1.84e-07),
    "sum_nchw_all": ("sum", (16, 64, 28, 28), None, False, "float32", "rand", 2.17e-08),
    "sum_4096x256_dim0": ("sum", (4096, 256), (0,), False, "float32", "rand", 1.41e-07),
    "sum_4096x256_all": ("sum", (4096, 256), None, False, "float32", "rand", 9.21e-08),
    "sum_3d_dims02": ("sum", (64, 32, 2000), (0, 2), False, "float32", "randn", 2.87e-07),
    "sum_4d_dims13": ("sum", (8, 128, 16, 256), (1, 3), False, "float32", "rand", 4.84e-07),
    "mean_nchw_all": ("mean", (32, 64, 56, 56), None, False, "float32", "relu", 6.35e-08),
    "mean_nchw_023": ("mean", (16, 64, 28, 28), (0, 2, 3), False, "float32", "relu", 1.91e-07),
    "mean_nchw_23": ("mean", (32, 64, 56, 56), (2, 3), False, "float32", "rand", 1.68e-07),
    "mean_4096x256_dim0": ("mean", (4096, 256), (0,), False, "float32", "randn", 1.59e-07),
    "mean_float16_023": ("mean", (16, 64, 28, 28), (0, 2, 3), False, "float16", "rand", 4.79e-04),
    "mean_bfloat16_all": ("mean", (16, 64, 28, 28), None, False, "bfloat16", "rand", 4.41e-04),
}


def _sum_result(m, row, x):
    op, _, dim, keepdim, dtype, _, _ = row
    t = m.tensor(x, dtype=getattr(m, dtype))
    r = getattr(t, op)() if dim is None else getattr(t, op)(dim, keepdim=keepdim)
    return (r.float() if dtype == "bfloat16" else r).numpy()


def _sum_case(name):
    row = SUMS[name]
    op, shape, dim, keepdim, dtype, kind, _ = row
    x = _data(kind, shape)
    if dtype == "bfloat16":  # (the data as bfloat16 rounds it: the reference is of those values)
        x = funcgrad.tensor(x).bfloat16().float().numpy()
    elif dtype == "float16":
        x = x.astype(np.float16)
    ref = getattr(x.astype(np.float64), op)(axis=dim, keepdims=keepdim)
    return row, x, ref


@pytest.mark.parametrize("name", sorted(SUMS))
def test_sum_error_within_torch_recorded(name):
    row, x, ref = _sum_case(name)
    err = _err(_sum_result(funcgrad, row, x), ref)
    assert err <= FACTOR * max(row[-1], _floor(row[4])), (err, row[-1])


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(SUMS))
def test_sum_error_within_torch_live(name):
    torch = pytest.importorskip("torch")
    row, x, ref = _sum_case(name)
    err = _err(_sum_result(funcgrad, row, x), ref)
    err_torch = _err(_sum_result(torch, row, x), ref)
    assert err <= FACTOR * max(err_torch, _floor(row[4])), (err, err_torch)


# ---- batch / instance / layer / group norm ---------------------------------------------------
OUTPUTS = ("y", "x.grad", "weight.grad", "bias.grad", "running_mean", "running_var")
# id: (layer, its argument (LayerNorm: normalized dims, GroupNorm: groups), shape, data,
#      PyTorch's recorded error per output as OUTPUTS, None where the layer keeps none)
NORMS = {
    "bn2d_32x64x56x56_relu": ("BatchNorm2d", None, (32, 64, 56, 56), "relu",
                              (1.14e-07, 1.24e-07, 2.15e-07, 3.41e-07, 5.39e-08, 6.82e-08)),
    "bn2d_8x16x32x32": ("BatchNorm2d", None, (8, 16, 32, 32), "randn",
                        (6.33e-08, 8.70e-08, 1.87e-07, 2.68e-07, 4.27e-08, 7.02e-08)),
    "bn1d_256x512": ("BatchNorm1d", None, (256, 512), "randn",
                     (2.20e-07, 2.23e-07, 3.40e-07, 2.72e-07, 2.70e-07, 3.06e-07)),
    "bn1d_32x64x1000": ("BatchNorm1d", None, (32, 64, 1000), "relu",
                        (7.97e-08, 1.18e-07, 2.11e-07, 2.11e-07, 5.33e-08, 7.94e-08)),
    "in2d_8x32x56x56": ("InstanceNorm2d", None, (8, 32, 56, 56), "relu",
                        (8.07e-08, 1.47e-07, 3.64e-07, 4.91e-07, None, None)),
    "in1d_16x32x3000": ("InstanceNorm1d", None, (16, 32, 3000), "randn",
                        (8.84e-08, 1.50e-07, 3.42e-07, 3.75e-07, None, None)),
    "ln_8x64x56x56_last3": ("LayerNorm", 3, (8, 64, 56, 56), "relu",
                            (1.15e-07, 1.54e-07, 1.23e-07, 9.18e-08, None, None)),
    "ln_32x128x512_last1": ("LayerNorm", 1, (32, 128, 512), "randn",
                            (1.19e-07, 1.64e-07, 1.52e-06, 1.67e-06, None, None)),
    "gn_8x64x56x56_g8": ("GroupNorm", 8, (8, 64, 56, 56), "relu",
                         (1.04e-07, 1.19e-07, 5.03e-07, 4.27e-07, None, None)),
}
EPS = 1e-5


def _params(name):
    """The layer's weight and bias (values other than 1 and 0, so that their gradients' sums
    are all checked), float32."""
    layer, arg, shape, _, _ = NORMS[name]
    pshape = shape[len(shape) - arg:] if layer == "LayerNorm" else (shape[1],)
    size = int(np.prod(pshape))
    return (np.linspace(0.5, 1.5, size, dtype=np.float32).reshape(pshape),
            np.linspace(-1, 1, size, dtype=np.float32).reshape(pshape))


def _norm_result(m, name, x, dy):
    layer, arg, shape, _, _ = NORMS[name]
    c = shape[1]
    if layer.startswith("Batch"):  # momentum=None: the first step's running stats are the batch's
        mod = getattr(m.nn, layer)(c, eps=EPS, momentum=None)
    elif layer.startswith("Instance"):
        mod = getattr(m.nn, layer)(c, eps=EPS, affine=True)
    elif layer == "LayerNorm":
        mod = m.nn.LayerNorm(shape[len(shape) - arg:], eps=EPS)
    else:
        mod = m.nn.GroupNorm(arg, c, eps=EPS)
    w, b = _params(name)
    with m.no_grad():
        mod.weight.copy_(m.tensor(w))
        mod.bias.copy_(m.tensor(b))
    xt = m.tensor(x, requires_grad=True)
    y = mod(xt)
    y.backward(m.tensor(dy))
    out = [y.detach().numpy(), xt.grad.numpy(), mod.weight.grad.numpy(), mod.bias.grad.numpy()]
    if layer.startswith("Batch"):
        out += [mod.running_mean.numpy(), mod.running_var.numpy()]
    return out


def _norm_reference(name, x, dy):
    """The layer's forward and backward in float64 NumPy: x viewed so that the statistics are
    over ``stat`` axes, the parameters broadcast over ``par`` axes of x."""
    layer, arg, shape, _, _ = NORMS[name]
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    nd, c = x.ndim, shape[1]
    w, b = (p.astype(np.float64) for p in _params(name))
    view = shape
    if layer == "LayerNorm":
        stat, par = tuple(range(nd - arg, nd)), tuple(range(nd - arg))
    else:
        par = (0,) + tuple(range(2, nd))
        w, b = w.reshape((1, c) + (1,) * (nd - 2)), b.reshape((1, c) + (1,) * (nd - 2))
        stat = tuple(range(2, nd)) if layer.startswith("Instance") else par
        if layer == "GroupNorm":
            view, stat = (shape[0], arg, c // arg) + shape[2:], tuple(range(2, nd + 1))
    xv = x.reshape(view)
    n = int(np.prod([view[a] for a in stat]))
    mean = xv.mean(stat, keepdims=True)
    var = np.square(xv - mean).mean(stat, keepdims=True)
    invstd = 1 / np.sqrt(var + EPS)
    xhat = (xv - mean) * invstd
    g = (dy * w).reshape(view)
    dx = invstd / n * (n * g - g.sum(stat, keepdims=True) - xhat * (g * xhat).sum(stat, keepdims=True))
    xhat = xhat.reshape(shape)
    out = [xhat * w + b, dx.reshape(shape), (dy * xhat).sum(par), dy.sum(par)]
    if layer.startswith("Batch"):
        out += [mean.reshape(c), var.reshape(c) * n / (n - 1)]
    return out


def _norm_case(name):
    _, _, shape, kind, _ = NORMS[name]
    x = _data(kind, shape, seed=1)
    dy = _data("randn", shape, seed=2) - np.float32(0.5)
    return x, dy, _norm_reference(name, x, dy)


def _check_norm(errs, errs_torch):
    bad = {OUTPUTS[i]: (e, t) for i, (e, t) in enumerate(zip(errs, errs_torch, strict=True))
           if not e <= FACTOR * max(t, _floor("float32"))}
    assert not bad, bad


@pytest.mark.parametrize("name", sorted(NORMS))
def test_norm_error_within_torch_recorded(name):
    x, dy, ref = _norm_case(name)
    errs = [_err(o, r) for o, r in zip(_norm_result(funcgrad, name, x, dy), ref, strict=True)]
    _check_norm(errs, [t for t in NORMS[name][4] if t is not None])


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(NORMS))
def test_norm_error_within_torch_live(name):
    torch = pytest.importorskip("torch")
    x, dy, ref = _norm_case(name)
    errs = [_err(o, r) for o, r in zip(_norm_result(funcgrad, name, x, dy), ref, strict=True)]
    errs_torch = [_err(o, r) for o, r in zip(_norm_result(torch, name, x, dy), ref, strict=True)]
    _check_norm(errs, errs_torch)


def test_integer_and_float64_sums_unchanged():
    """Sums that were exact or float64 keep jnp.sum's bits (the structured sum is float32's)."""
    import jax.numpy as jnp
    rng = np.random.default_rng(3)
    xi = rng.integers(-1000, 1000, (8, 16, 30, 30))
    xd = rng.standard_normal((8, 16, 30, 30))
    for x in (xi, xd):
        for dim in (None, (0, 2, 3), (1, 3)):
            got = funcgrad.tensor(x).sum() if dim is None else funcgrad.tensor(x).sum(dim)
            want = jnp.sum(jnp.asarray(x), axis=dim)
            np.testing.assert_array_equal(got.numpy(), np.asarray(want))
