"""``F.linear`` on a batch: PyTorch's graph (AddmmBackward0 <- TBackward0 <- weight) with a lazy
``weight.t()`` that is never materialised on the hot path (funcgrad/_ops/linalg.py linear_2d)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
import funcgrad.nn.functional as F
from funcgrad import _tensor
from funcgrad import nn


def _ref(x, w, b):
    return jax.grad(lambda x, w, b: jnp.sum(jnp.tanh(x @ w.T + b)), argnums=(0, 1, 2))(x, w, b)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((5, 4)), rng.standard_normal((3, 4)), rng.standard_normal(3))


@pytest.mark.parametrize("needs", [(True, True, True), (False, True, True), (True, False, False),
                                   (True, False, True), (False, False, True)])
def test_gradients_match_jax_first_and_repeated_backward(needs):
    xs, ws, bs = _data()
    gx, gw, gb = _ref(xs, ws, bs)
    for _ in range(4):  # the first backward compiles the fused program, later ones replay it
        x, w, b = (funcgrad.tensor(a, dtype=funcgrad.float64, requires_grad=r)
                   for a, r in zip((xs, ws, bs), needs))
        F.linear(x, w, b).tanh().sum().backward()
        for t, g, r in zip((x, w, b), (gx, gw, gb), needs):
            if r:
                np.testing.assert_allclose(t.grad.numpy(), g, rtol=1e-12)
            else:
                assert t.grad is None


def test_graph_is_pytorchs_and_the_transpose_is_never_computed(monkeypatch):
    lin = nn.Linear(4, 3).double()
    x = funcgrad.randn(5, 4, dtype=funcgrad.float64)
    out = lin(x)
    assert out.grad_fn.name() == "AddmmBackward0"
    names = [None if f is None else f.name() for f, _ in out.grad_fn.next_functions]
    assert names == ["torch::autograd::AccumulateGrad", None, "TBackward0"]
    assert out.grad_fn.next_functions[2][0].next_functions[0][0].variable is lin.weight
    out.sum().backward()  # first sighting: compiles the fused program
    calls = []
    real = _tensor._view_kernel
    monkeypatch.setattr(_tensor, "_view_kernel", lambda chain: calls.append(chain) or real(chain))
    for _ in range(3):
        lin.zero_grad()
        out = lin(x)
        wt = out.grad_fn._saved[2]  # the saved mat2: weight.t()
        assert wt._viewinfo.base is lin.weight and wt._viewinfo.cache is None
        out.sum().backward()
        assert wt._viewinfo.cache is None
    assert calls == []  # forward and fused backward never materialised weight.t()
    assert wt.shape == (4, 3) and np.array_equal(wt.detach().numpy(), lin.weight.detach().numpy().T)
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.tile(x.numpy().sum(0), (3, 1)), rtol=1e-12)


def test_inplace_weight_change_before_backward_raises_pytorchs_error():
    lin = nn.Linear(4, 3)
    loss = lin(funcgrad.randn(2, 4, requires_grad=True)).sum()
    with funcgrad.no_grad():
        lin.weight.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_double_backward_and_retain_graph():
    xs, ws, bs = _data(1)
    x = funcgrad.tensor(xs, requires_grad=True)
    w = funcgrad.tensor(ws, requires_grad=True)
    b = funcgrad.tensor(bs, requires_grad=True)
    y = F.linear(x, w, b).tanh().sum()
    (gx,) = funcgrad.autograd.grad(y, x, create_graph=True)
    gx.pow(2).sum().backward()
    ref = jax.grad(lambda w: jnp.sum(jax.grad(lambda x: jnp.sum(jnp.tanh(x @ w.T + bs)))(xs) ** 2))(ws)
    np.testing.assert_allclose(w.grad.numpy(), ref, rtol=1e-10)
    w.grad = None
    z = F.linear(x, w, b).sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.tile(xs.sum(0), (3, 1)), rtol=1e-12)


def test_shape_and_dtype_errors_are_pytorchs():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x4 and 5x3\)"):
        F.linear(funcgrad.randn(2, 4), funcgrad.randn(3, 5), funcgrad.randn(3))
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got Float and Double"):
        F.linear(funcgrad.randn(2, 4), funcgrad.randn(3, 4, dtype=funcgrad.float64), funcgrad.randn(3))


def test_no_grad_and_compiled():
    lin = nn.Linear(4, 3)
    x = funcgrad.randn(2, 4)
    with funcgrad.no_grad():
        y = lin(x)
    assert y.grad_fn is None and not y.requires_grad
    np.testing.assert_allclose(y.numpy(), x.numpy() @ lin.weight.detach().numpy().T
                               + lin.bias.detach().numpy(), rtol=1e-6)

    @funcgrad.jit
    def step(x):
        lin.zero_grad()
        loss = lin(x).pow(2).sum()
        loss.backward()
        return loss
    step(x)
    g = lin.weight.grad.numpy().copy()
    lin.zero_grad()
    lin(x).pow(2).sum().backward()
    np.testing.assert_allclose(g, lin.weight.grad.numpy(), rtol=1e-6)
