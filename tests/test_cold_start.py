"""The first step of a fresh process: what it compiles, and that the cheaper paths taken there
give the same bits as the kernels they stand in for. Nothing here is timed: compilations are
counted (jax's monitoring event)."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad import _factories, nn

from .test_caches import _COMPILES  # the XLA-compile counter, one definition


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint8).tobytes(), a.dtype, a.shape


def test_building_a_model_compiles_no_kernel_per_shape():
    # shapes no other test uses: before, each parameter and buffer shape compiled a fill, a
    # staging copy and a random kernel (15 compilations for this model)
    funcgrad.manual_seed(0)
    _factories._fills_seen.clear()  # as in a fresh process (only which path fills changes)
    with _COMPILES as c:
        model = nn.Sequential(nn.Conv2d(3, 7, 5, padding=1), nn.BatchNorm2d(7), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Linear(7 * 3 * 3, 13))
        funcgrad.tensor([[1.5, 2.5, 3.5]] * 17)
        funcgrad.zeros(19, 3)
    assert c.n <= 2, c.n  # at most the two shared random kernels (bucket sizes), when cold
    assert len(list(model.parameters())) == 6


@pytest.mark.parametrize("fill,dtype", [(0, "float32"), (1, "float64"), (0.1, "float32"),
                                        (1e-30, "float32"), (math.inf, "float64"),
                                        (math.nan, "float32"), (True, "float32"), (7, "int64"),
                                        (-128, "int8"), (255, "uint8"), (True, "bool"),
                                        (1 << 24, "float32"), (-0.0, "float64")])
def test_host_fill_is_the_kernel_fill(fill, dtype):
    shape = (3, 5)
    dt = np.dtype(dtype)
    want = _factories._full_jit(fill, shape, dt)  # the kernel a repeated fill runs
    _factories._fills_seen.pop((shape, dt), None)
    host = _factories.host_full(shape, fill, dt)
    assert host is not None
    assert _bits(host) == _bits(want)
    # past HOST_FILLS sightings the kernel runs
    _factories._fills_seen[(shape, dt)] = _factories.HOST_FILLS
    assert _factories.host_full(shape, fill, dt) is None
    t = funcgrad.full(shape, fill, dtype=getattr(funcgrad, dtype))
    assert _bits(t._value) == _bits(want)


@pytest.mark.parametrize("fill,dtype", [(2.5, "int64"), (1 << 40, "int32"), (1 << 25, "float32"),
                                        (-2.5e-40, "float32"), (1e-310, "float64"), (1e-39, "float32"),
                                        (0.5, "bfloat16"), (1, "float16"), (1 + 2j, "complex64")])
def test_host_fill_leaves_other_roundings_to_the_kernel(fill, dtype):
    dt = jnp.dtype(dtype)
    assert _factories.host_full((2,), fill, dt) is None


def test_zero_and_fill_of_a_buffer_as_the_kernel():
    x = funcgrad.randn(4, 6)
    assert _bits(x.clone().zero_()._value) == _bits(jnp.zeros((4, 6), jnp.float32))
    assert _bits(x.clone().fill_(0.3)._value) == _bits(jnp.full((4, 6), 0.3, jnp.float32))
    # recorded in grad mode: the op (FillBackward2), not the host
    w = funcgrad.randn(4, 6, requires_grad=True) * 1
    y = w.fill_(2.0)
    assert type(y.grad_fn).__name__ == "FillBackward2"
    y.sum().backward()


@pytest.mark.torch
@pytest.mark.parametrize("shape,k,stride,pad", [((4, 3, 8, 8), (2, 2), None, 0), ((2, 3, 7, 10), (3, 2), None, 0),
                                                ((2, 2, 4, 6, 5), (2, 3, 2), None, 0),
                                                ((2, 3, 7, 9), (3, 3), (2, 2), 1)])
def test_max_pool_gradient_bits_are_torchs(shape, k, stride, pad):
    """max_pool's derivative (tiling windows: a reshape; others gathered) routes each window's
    gradient where PyTorch's kernel does: ties (ReLU zeros), NaN (the last one), -inf, -0.0
    cotangents, cropped remainders, padding, bit for bit."""
    torch = pytest.importorskip("torch")
    rs = np.random.RandomState(0)
    x = rs.randn(*shape).astype(np.float32)
    x[x < 0.3] = 0.0
    x[rs.rand(*shape) < 0.1] = np.nan
    x[rs.rand(*shape) < 0.05] = -np.inf
    grads = []
    for L in (funcgrad, torch):
        xt = L.tensor(x, requires_grad=True)
        pool = L.nn.functional.max_pool2d if len(k) == 2 else L.nn.functional.max_pool3d
        out = pool(xt, k, stride, pad)
        g = np.random.RandomState(1).randn(*out.shape).astype(np.float32)
        g[g > 0.8] = -0.0
        out.backward(L.tensor(g))
        grads.append(np.asarray(xt.grad.numpy()))
    assert grads[0].tobytes() == grads[1].tobytes()


@pytest.mark.torch
def test_max_pool_gradient_matches_torch_with_ties():
    torch = pytest.importorskip("torch")
    rs = np.random.RandomState(1)
    x = np.maximum(rs.randn(2, 3, 6, 6).astype(np.float32), 0)  # many all-zero windows
    g = rs.randn(2, 3, 3, 3).astype(np.float32)
    xt = funcgrad.tensor(x, requires_grad=True)
    funcgrad.nn.functional.max_pool2d(xt, 2).backward(funcgrad.tensor(g))
    xr = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(xr, 2).backward(torch.tensor(g))
    np.testing.assert_array_equal(xt.grad.numpy(), xr.grad.numpy())
