"""funcgrad.func and JAX interop: functional_call under jax.grad/vmap/jit, Tensor pytrees."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad import nn
from funcgrad.func import functional_call
import funcgrad.nn.functional as F


def test_tensor_is_pytree():
    d = {"a": funcgrad.ones(2), "b": funcgrad.zeros(3)}
    leaves = jax.tree.leaves(d)
    assert [type(x) for x in leaves] == [type(jnp.ones(1))] * 2
    out = jax.tree.map(lambda x: x * 2, d)
    assert isinstance(out["a"], funcgrad.Tensor) and out["a"].tolist() == [2.0, 2.0]


def test_plain_jax_jit_over_funcgrad_code():
    lin = nn.Linear(3, 2)

    @jax.jit
    def f(x):
        return (lin(x) ** 2).sum()

    x = funcgrad.randn(4, 3)
    with funcgrad.no_grad():
        ref = (lin(x) ** 2).sum()
    np.testing.assert_allclose(f(x).item(), ref.item(), rtol=1e-6)
    assert isinstance(lin.weight._value, jax.Array)


def test_functional_call_grad_matches_backward():
    funcgrad.set_default_dtype(funcgrad.float64)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    x, y = funcgrad.randn(5, 4), funcgrad.randint(0, 3, (5,))
    params = {k: v.detach().jax() for k, v in model.named_parameters()}
    g = jax.grad(lambda p: F.cross_entropy(functional_call(model, p, (x.jax(),)), y).jax())(params)
    F.cross_entropy(model(x), y).backward()
    for k, p in model.named_parameters():
        np.testing.assert_allclose(np.asarray(g[k]), p.grad.numpy(), rtol=1e-10, atol=1e-14)
    # the module itself was not changed
    for k, p in model.named_parameters():
        np.testing.assert_array_equal(p.detach().numpy(), np.asarray(params[k]))


def test_per_example_gradients_with_vmap():
    funcgrad.set_default_dtype(funcgrad.float64)
    model = nn.Linear(3, 1)
    params = {k: v.detach().jax() for k, v in model.named_parameters()}
    xs, ys = funcgrad.randn(6, 3).jax(), funcgrad.randn(6, 1).jax()

    def loss(p, x, y):
        return ((functional_call(model, p, (x[None],)) - y[None]) ** 2).sum()

    per = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)
    assert per["weight"].shape == (6, 1, 3)
    for i in range(6):
        model.zero_grad()
        out = model(funcgrad.from_jax(xs[i:i + 1]))
        ((out - funcgrad.from_jax(ys[i:i + 1])) ** 2).sum().backward()
        np.testing.assert_allclose(np.asarray(per["weight"][i]), model.weight.grad.numpy(), rtol=1e-10)


def test_functional_call_with_tensors_is_differentiable_by_funcgrad():
    model = nn.Linear(2, 1)
    w = funcgrad.ones(1, 2, requires_grad=True)
    out = functional_call(model, {"weight": w}, funcgrad.ones(3, 2))
    out.sum().backward()
    assert w.grad.tolist() == [[3.0, 3.0]]
    assert model.weight.grad is None


def test_functional_call_buffers_not_leaked_under_jax_grad():
    bn = nn.BatchNorm1d(3)
    params = {k: v.detach().jax() for k, v in bn.named_parameters()}
    jax.grad(lambda p: functional_call(bn, p, jnp.ones((4, 3))).sum())(params)
    assert isinstance(bn.running_mean._value, jax.Array)


def test_functional_call_strict_and_duplicates():
    lin = nn.Linear(2, 1)
    with pytest.raises(RuntimeError, match="Missing key"):
        functional_call(lin, {"weight": jnp.ones((1, 2))}, jnp.ones((1, 2)), strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(lin, ({"weight": jnp.ones((1, 2))}, {"weight": jnp.ones((1, 2))}), jnp.ones((1, 2)))


def test_func_wrappers():
    x = funcgrad.tensor([1.0, 2.0])
    assert funcgrad.func.grad(lambda t: (t ** 2).sum())(x).tolist() == [2.0, 4.0]
    out, fn = funcgrad.func.vjp(lambda t: t * 3, x)
    assert fn(funcgrad.ones(2))[0].tolist() == [3.0, 3.0]
    assert funcgrad.func.jacrev(lambda t: t * 2)(x).tolist() == [[2.0, 0.0], [0.0, 2.0]]
    assert funcgrad.func.vmap(lambda r: r.sum())(funcgrad.ones(3, 2)).tolist() == [2.0, 2.0, 2.0]


def test_functional_call_rng_stream_is_this_threads_only():
    """rng= gives the call's draws their own stream on the calling thread only: another thread
    drawing meanwhile draws from (and advances) the global stream, which the call leaves alone."""
    import threading

    seen = {}

    class Probe(nn.Module):
        def forward(self, x):
            t = threading.Thread(target=lambda: seen.setdefault("other", funcgrad.rand(3)))
            t.start()
            t.join()
            return F.dropout(x, 0.5, training=True)

    funcgrad.manual_seed(0)
    expected_other = funcgrad.rand(3)
    after_other = funcgrad.get_rng_state()
    funcgrad.manual_seed(0)
    x = funcgrad.ones(64)
    a = functional_call(Probe(), {}, (x,), rng=jax.random.PRNGKey(1))
    assert funcgrad.equal(seen["other"], expected_other)  # the global stream, not rng='s
    assert funcgrad.equal(funcgrad.get_rng_state(), after_other)  # its draw kept, not undone
    b = functional_call(nn.Dropout(0.5), {}, (x,), rng=jax.random.PRNGKey(1))
    assert funcgrad.equal(a, b)  # the call's draws came from rng='s stream
    g = funcgrad.Generator().manual_seed(3)
    c = functional_call(nn.Dropout(0.5), {}, (x,), rng=g)
    funcgrad.manual_seed(3)
    assert funcgrad.equal(c, F.dropout(x, 0.5, training=True))  # a Generator's stream, as eagerly
    assert funcgrad.equal(g.get_state(), funcgrad.get_rng_state())  # and it advanced as eagerly
