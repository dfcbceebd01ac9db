"""Property tests: random small expression graphs, differentiated by funcgrad and by ``jax.grad``
of the same ``jax.numpy`` program (float64), must agree.

hypothesis draws leaves with broadcast-compatible shapes, a sequence of ops from the table
below (unary, binary with broadcasting, reductions, shape ops), and where ``detach()`` /
``no_grad`` cut the graph (``jax.lax.stop_gradient`` on the jax side).

Profiles: ``ci`` (default, 40 examples) and ``long`` (1 000): ``HYPOTHESIS_PROFILE=long``.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import funcgrad  # noqa: E402

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    PROFILE = "ci"
EXAMPLES_RUN = [0]

sg = jax.lax.stop_gradient

# name -> (funcgrad fn, jax fn); all smooth on the values that can occur (bounded inputs)
UNARY = {
    "sin": (lambda x: x.sin(), jnp.sin),
    "tanh": (funcgrad.tanh, jnp.tanh),
    "sigmoid": (lambda x: x.sigmoid(), jax.nn.sigmoid),
    "neg": (lambda x: -x, lambda x: -x),
    "square": (lambda x: x * x, lambda x: x * x),
    "exp_tanh": (lambda x: x.tanh().exp(), lambda x: jnp.exp(jnp.tanh(x))),
    "log1p_sq": (lambda x: (x * x).log1p(), lambda x: jnp.log1p(x * x)),
    "sqrt_1p": (lambda x: (x * x + 1).sqrt(), lambda x: jnp.sqrt(x * x + 1)),
    "softplus": (funcgrad.nn.functional.softplus, jax.nn.softplus),
    "scale": (lambda x: 0.5 * x - 0.25, lambda x: 0.5 * x - 0.25),
    "pow3": (lambda x: x ** 3, lambda x: x ** 3),
    "atan": (lambda x: x.atan(), jnp.arctan),
}
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / (1.5 + b.tanh()), lambda a, b: a / (1.5 + jnp.tanh(b))),
    "hypot_like": (lambda a, b: (a * a + b * b + 0.1).sqrt(), lambda a, b: jnp.sqrt(a * a + b * b + 0.1)),
    "where": (lambda a, b: funcgrad.where(a > b, a, b * 2),
              lambda a, b: jnp.where(a > b, a, b * 2)),
    "atan2": (lambda a, b: funcgrad.atan2(a, b + 3.0), lambda a, b: jnp.arctan2(a, b + 3.0)),
}
# reductions over a dim: (funcgrad, jax), dim and keepdim drawn
REDUCE = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), lambda x, d, k: x.sum(d, keepdims=k)),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), lambda x, d, k: x.mean(d, keepdims=k)),
    "logsumexp": (lambda x, d, k: x.logsumexp(d, keepdim=k),
                  lambda x, d, k: jax.scipy.special.logsumexp(x, d, keepdims=k)),
    "prod": (lambda x, d, k: x.prod(d, keepdim=k), lambda x, d, k: x.prod(d, keepdims=k)),
    "softmax": (lambda x, d, k: x.softmax(d), lambda x, d, k: jax.nn.softmax(x, d)),
    "log_softmax": (lambda x, d, k: x.log_softmax(d), lambda x, d, k: jax.nn.log_softmax(x, d)),
    "cumsum": (lambda x, d, k: x.cumsum(d), lambda x, d, k: jnp.cumsum(x, d)),
}
SHAPE = {
    "t": (lambda x: x.transpose(0, -1), lambda x: jnp.swapaxes(x, 0, -1)),
    "flip": (lambda x: x.flip(-1), lambda x: jnp.flip(x, -1)),
    "flatten": (lambda x: x.reshape(-1), lambda x: x.reshape(-1)),
    "unsqueeze": (lambda x: x.unsqueeze(0), lambda x: x[None]),
    "slice": (lambda x: x[..., :1], lambda x: x[..., :1]),
    "expand": (lambda x: x.unsqueeze(0).expand(2, *x.shape), lambda x: jnp.broadcast_to(x, (2,) + x.shape)),
}

dims = st.integers(1, 3)


@st.composite
def leaf_shapes(draw):
    base = draw(st.lists(dims, min_size=1, max_size=3))
    n = draw(st.integers(1, 3))
    shapes = []
    for _ in range(n):  # broadcast-compatible with base: drop leading dims / set some to 1
        k = draw(st.integers(0, len(base) - 1))
        shapes.append(tuple(1 if draw(st.booleans()) and i % 2 else s for i, s in enumerate(base[k:])))
    return shapes


def _build(data, shapes):
    """Draw a program; return ``run(xs, lib)`` evaluating it on funcgrad or jax values."""
    prog = []
    pool_shapes = list(shapes)
    for _ in range(data.draw(st.integers(1, 6), label="n_ops")):
        kind = data.draw(st.sampled_from(["unary", "binary", "reduce", "shape"]), label="kind")
        i = data.draw(st.integers(0, len(pool_shapes) - 1), label="operand")
        s = pool_shapes[i]
        cut = data.draw(st.sampled_from([None, None, None, "detach", "no_grad"]), label="cut")
        if kind == "binary":
            j = data.draw(st.integers(0, len(pool_shapes) - 1), label="operand2")
            try:
                out = np.broadcast_shapes(s, pool_shapes[j])
            except ValueError:
                kind = "unary"
            else:
                name = data.draw(st.sampled_from(sorted(BINARY)), label="binary")
                prog.append(("binary", name, (i, j), None, cut))
                pool_shapes.append(out)
                continue
        if kind == "reduce" and len(s) >= 1:
            name = data.draw(st.sampled_from(sorted(REDUCE)), label="reduce")
            d = data.draw(st.integers(-len(s), len(s) - 1), label="dim")
            k = data.draw(st.booleans(), label="keepdim")
            out = jax.eval_shape(lambda x: REDUCE[name][1](x, d, k), jax.ShapeDtypeStruct(s, jnp.float64)).shape
            prog.append(("reduce", name, (i,), (d, k), cut))
            pool_shapes.append(out)
            continue
        if kind == "shape" and len(s) >= 1:
            name = data.draw(st.sampled_from(sorted(SHAPE)), label="shape")
            out = jax.eval_shape(SHAPE[name][1], jax.ShapeDtypeStruct(s, jnp.float64)).shape
            prog.append(("shape", name, (i,), None, cut))
            pool_shapes.append(out)
            continue
        name = data.draw(st.sampled_from(sorted(UNARY)), label="unary")
        prog.append(("unary", name, (i,), None, cut))
        pool_shapes.append(s)
    weights = [data.draw(st.sampled_from([0.0, 0.5, 1.0]), label="w") for _ in pool_shapes]
    weights[-1] = 1.0

    def run(xs, lib):
        pool = list(xs)
        fg = lib == "funcgrad"
        for kind, name, ops, extra, cut in prog:
            args = [pool[k] for k in ops]
            table = {"unary": UNARY, "binary": BINARY, "reduce": REDUCE, "shape": SHAPE}[kind]
            fn = table[name][0 if fg else 1]
            call = (lambda: fn(*args, *extra)) if extra is not None else (lambda: fn(*args))
            if cut == "no_grad":
                if fg:
                    with funcgrad.no_grad():
                        r = call()
                else:
                    r = sg(call())
            elif cut == "detach":
                r = call()
                r = r.detach() if fg else sg(r)
            else:
                r = call()
            pool.append(r)
        total = 0.0
        for w, v in zip(weights, pool):
            if w:
                total = total + w * ((v * v).sum() if fg else jnp.sum(v * v))
        return total

    return prog, run


@settings(settings.get_profile(PROFILE))
@given(shapes=leaf_shapes(), data=st.data(), seed=st.integers(0, 2**16))
def test_random_graph_gradients_match_jax(shapes, data, seed):
    EXAMPLES_RUN[0] += 1
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1.0, 1.0, s) for s in shapes]
    prog, run = _build(data, shapes)
    xs = [funcgrad.tensor(a, dtype=funcgrad.float64, requires_grad=True) for a in arrays]
    out = run(xs, "funcgrad")
    expected = jax.grad(lambda *a: run(list(a), "jax"), argnums=tuple(range(len(arrays))))(
        *[jnp.asarray(a) for a in arrays])
    if isinstance(out, funcgrad.Tensor) and out.requires_grad:
        out.backward()
    for x, e in zip(xs, expected):
        got = np.zeros(x.shape) if x.grad is None else np.asarray(x.grad._value)
        assert x.grad is None or x.grad.dtype == funcgrad.float64
        np.testing.assert_allclose(got, np.asarray(e), rtol=1e-9, atol=1e-12, err_msg=str(prog))
    # the forward values agree too
    np.testing.assert_allclose(float(out), float(run([jnp.asarray(a) for a in arrays], "jax")),
                               rtol=1e-12)


def test_examples_were_run():
    """The property test above really ran its examples (reported by ``pytest -s``)."""
    print(f"\n[hypothesis] profile {PROFILE}: {EXAMPLES_RUN[0]} examples")
    assert EXAMPLES_RUN[0] >= settings.get_profile(PROFILE).max_examples or EXAMPLES_RUN[0] == 0
