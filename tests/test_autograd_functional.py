"""autograd.functional: values vs jax, PyTorch's return structures and messages, the engine path
(create_graph / strict / untraceable funcs) agreeing with the pure JAX path, and cache safety."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad.autograd import functional as F

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])
Y = np.array([0.2, 0.4, -0.6])


def _t(a):
    return funcgrad.tensor(a, dtype=funcgrad.float64)


def f2(x, y):
    return (x * y).exp().sum(1), (x @ y) ** 2


def f2_ref(x, y):
    return jnp.exp(x * y).sum(1), (x @ y) ** 2


def s1(x, y):
    return ((x * y).tanh() ** 2).sum() + (y ** 3).sum()


def s1_ref(x, y):
    return (jnp.tanh(x * y) ** 2).sum() + (y ** 3).sum()


def _np(t):
    return np.asarray(t.detach()._value)


def _close(got, want):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
    else:
        assert isinstance(got, funcgrad.Tensor)
        np.testing.assert_allclose(_np(got), np.asarray(want), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("create_graph", [False, True])
def test_jacobian_and_hessian_vs_jax(create_graph):
    x, y = _t(X), _t(Y)
    _close(F.jacobian(f2, (x, y), create_graph=create_graph),
           jax.jacrev(f2_ref, argnums=(0, 1))(X, Y))
    _close(F.hessian(s1, (x, y), create_graph=create_graph),
           jax.hessian(s1_ref, argnums=(0, 1))(X, Y))
    # single input, single output: a Tensor
    j = F.jacobian(lambda a: (a ** 3).sin(), x, create_graph=create_graph)
    _close(j, jax.jacrev(lambda a: jnp.sin(a ** 3))(X))
    assert j.requires_grad == create_graph


def test_jacobian_structures_and_strategies():
    x, y = _t(X), _t(Y)
    j = F.jacobian(lambda a, b: a * b, (x, y))
    assert isinstance(j, tuple) and len(j) == 2 and j[0].shape == (2, 3, 2, 3)
    j = F.jacobian(lambda a: (a, a.sum()), x)
    assert isinstance(j, tuple) and j[1].shape == (2, 3)
    jf = F.jacobian(f2, (x, y), strategy="forward-mode", vectorize=True)
    _close(jf, jax.jacrev(f2_ref, argnums=(0, 1))(X, Y))
    hf = F.hessian(s1, (x, y), outer_jacobian_strategy="forward-mode", vectorize=True)
    _close(hf, jax.hessian(s1_ref, argnums=(0, 1))(X, Y))
    # PyTorch computes a forward-mode jacobian only vectorized
    for call in (lambda: F.hessian(s1, (x, y), outer_jacobian_strategy="forward-mode"),
                 lambda: F.jacobian(f2, (x, y), strategy="forward-mode")):
        with pytest.raises(NotImplementedError, match=r"forward-over-reverse Hessian isonly implemented for "
                                                      r"`vectorize=True`\."):
            call()
    _close(F.jacobian(lambda a, b: a * 2, (x, y)), (np.zeros((2, 3, 2, 3)) + _np(
        F.jacobian(lambda a: a * 2, x)), np.zeros((2, 3, 3))))


@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp_jvp_hvp_vhp_vs_jax(create_graph):
    x, y = _t(X), _t(Y)
    v_out = (_t(np.array([1.0, -2.0])), _t(np.array([0.5, 3.0])))
    v_in = (_t(np.ones((2, 3)) * 0.3), _t(np.array([1.0, 2.0, -1.0])))
    out, g = F.vjp(f2, (x, y), v_out, create_graph=create_graph)
    ref_out, pull = jax.vjp(f2_ref, X, Y)
    _close(out, ref_out)
    _close(g, pull(tuple(np.asarray(_np(v)) for v in v_out)))
    out, t = F.jvp(f2, (x, y), v_in, create_graph=create_graph)
    _close(t, jax.jvp(f2_ref, (X, Y), tuple(_np(v) for v in v_in))[1])
    H = jax.hessian(s1_ref, argnums=(0, 1))(X, Y)
    vx, vy = (_np(v) for v in v_in)
    hv = (np.tensordot(H[0][0], vx, 2) + np.tensordot(H[0][1], vy, 1),
          np.tensordot(H[1][0], vx, 2) + np.tensordot(H[1][1], vy, 1))
    for fn in (F.hvp, F.vhp):
        out, r = fn(s1, (x, y), v_in, create_graph=create_graph)
        _close(out, s1_ref(X, Y))
        _close(r, hv)
        assert r[0].requires_grad == create_graph


def test_single_element_defaults_and_outputs_detached():
    x = funcgrad.tensor([1.0, 2.0], requires_grad=True)
    out, g = F.vjp(lambda a: (a ** 2).sum(), x)
    assert not out.requires_grad and not g.requires_grad
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    out, t = F.jvp(lambda a: a * 3, funcgrad.tensor([2.0]))
    np.testing.assert_allclose(t.numpy(), [3.0])
    assert x.grad is None


@pytest.mark.parametrize("call, msg", [
    (lambda x: F.vjp(lambda a: a * 2, x), "The vector v can only be None if the user-provided "
                                          "function returns a single Tensor with a single element."),
    (lambda x: F.jvp(lambda a: a * 2, x), "The vector v can only be None if the input to the "
                                          "user-provided function is a single Tensor with a single "
                                          "element."),
    (lambda x: F.vjp(lambda a: a * 2, x, funcgrad.ones(3)),
     "v has invalid size: should be funcgrad.Size([2]) but got funcgrad.Size([3])."),
    (lambda x: F.jvp(lambda a, b: a, (x, x), (x,)), "v is a tuple of invalid length: should be 2 but "
                                                    "got 1."),
    (lambda x: F.hessian(lambda a: a * 2, x), "The Tensor returned by the function given to hessian "
                                              "should contain a single element"),
    (lambda x: F.hvp(lambda a: (a, a), x, x), "The function given to hvp should return a single "
                                              "Tensor"),
    (lambda x: F.jacobian(lambda a, b: a, (x, x), strict=True),
     "Output 0 of the user-provided function is independent of input 1. This is not allowed in "
     "strict mode."),
    (lambda x: F.jacobian(lambda a: a, x, strategy="forward-mode", create_graph=True),
     "torch.autograd.functional.jacobian: `create_graph=True` and `strategy=\"forward-mode\"` are "
     "not supported together (yet)."),
])
def test_errors(call, msg):
    with pytest.raises((RuntimeError, NotImplementedError)) as e:
        call(funcgrad.ones(2))
    assert str(e.value).startswith(msg)


def test_type_errors():
    with pytest.raises(TypeError, match="The outputs of the user-provided function given to jacobian "
                                        "must be either a Tensor or a tuple of Tensors but the given "
                                        "outputs of the user-provided function has type <class 'int'>."):
        F.jacobian(lambda a: 3, funcgrad.ones(2))
    with pytest.raises(TypeError, match="The inputs given to vjp must be either a Tensor or a tuple of "
                                        "Tensors but the value at index 1 has type <class 'int'>."):
        F.vjp(lambda a, b: a, (funcgrad.ones(2), 3))


def test_create_graph_results_are_differentiable():
    x = funcgrad.tensor([1.0, 2.0], dtype=funcgrad.float64, requires_grad=True)
    _, g = F.vjp(lambda a: (a ** 3).sum(), x, create_graph=True)
    (gg,) = funcgrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])


def test_untraceable_func_falls_back_to_the_engine():
    def f(a):
        k = a.sum().item()  # concrete value: JAX cannot trace this
        return a * k

    x = _t(np.array([1.0, 2.0]))
    j = F.jacobian(f, x)
    np.testing.assert_allclose(j.numpy(), [[3.0, 0.0], [0.0, 3.0]])  # .item() is a constant, as in PyTorch


def test_cache_sees_changed_closures_and_globals():
    w = _t(np.array([1.0, 2.0]))
    x = _t(np.array([3.0, 4.0]))

    def g(a):
        return (a * w).sum() * SCALE

    global SCALE
    SCALE = 1.0
    for _ in range(3):  # the third call runs the jitted transform when it is safe
        np.testing.assert_allclose(F.jacobian(g, x).numpy(), [1.0, 2.0])
    with funcgrad.no_grad():
        w.mul_(10)
    np.testing.assert_allclose(F.jacobian(g, x).numpy(), [10.0, 20.0])
    SCALE = 2.0
    np.testing.assert_allclose(F.jacobian(g, x).numpy(), [20.0, 40.0])

    def pure(a):
        return (a ** 2).sum() * SCALE
    for _ in range(3):
        np.testing.assert_allclose(F.jacobian(pure, x).numpy(), [12.0, 16.0])
    SCALE = 1.0
    np.testing.assert_allclose(F.jacobian(pure, x).numpy(), [6.0, 8.0])


SCALE = 1.0
