"""Property tests: random small expression graphs, differentiated by funcgrad and by PyTorch
(the same program, float64), must agree.

hypothesis draws leaves with broadcast-compatible shapes, a sequence of ops from the table
below (unary, binary with broadcasting, reductions, shape ops), and where ``detach()`` /
``no_grad`` cut the graph. Each table entry is written once, ``fn(lib, ...)`` with ``lib`` the
``funcgrad`` or the ``torch`` module, and runs on both.

Profiles: ``ci`` (default, 40 examples) and ``long`` (1 000): ``HYPOTHESIS_PROFILE=long``.
"""

import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import funcgrad  # noqa: E402

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.torch,
    # hypothesis's failure report imports libcst, which warns (as an error here): without this a
    # falsified example shows as a pytest INTERNALERROR instead of its failure message
    pytest.mark.filterwarnings("ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"),
]

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    PROFILE = "ci"
EXAMPLES_RUN = [0]

# name -> fn(lib, ...); all smooth on the values that can occur (bounded inputs)
UNARY = {
    "sin": lambda L, x: x.sin(),
    "tanh": lambda L, x: L.tanh(x),
    "sigmoid": lambda L, x: x.sigmoid(),
    "neg": lambda L, x: -x,
    "square": lambda L, x: x * x,
    "exp_tanh": lambda L, x: x.tanh().exp(),
    "log1p_sq": lambda L, x: (x * x).log1p(),
    "sqrt_1p": lambda L, x: (x * x + 1).sqrt(),
    "softplus": lambda L, x: L.nn.functional.softplus(x),
    "scale": lambda L, x: 0.5 * x - 0.25,
    "pow3": lambda L, x: x ** 3,
    "atan": lambda L, x: x.atan(),
}
BINARY = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / (1.5 + b.tanh()),
    "hypot_like": lambda L, a, b: (a * a + b * b + 0.1).sqrt(),
    "where": lambda L, a, b: L.where(a > b, a, b * 2),
    "atan2": lambda L, a, b: L.atan2(a, b + 3.0),
}
# reductions over a dim: dim and keepdim drawn
REDUCE = {
    "sum": lambda L, x, d, k: x.sum(d, keepdim=k),
    "mean": lambda L, x, d, k: x.mean(d, keepdim=k),
    "logsumexp": lambda L, x, d, k: x.logsumexp(d, keepdim=k),
    "prod": lambda L, x, d, k: x.prod(d, keepdim=k),
    "softmax": lambda L, x, d, k: x.softmax(d),
    "log_softmax": lambda L, x, d, k: x.log_softmax(d),
    "cumsum": lambda L, x, d, k: x.cumsum(d),
}
SHAPE = {
    "t": lambda L, x: x.transpose(0, -1),
    "flip": lambda L, x: x.flip(-1),
    "flatten": lambda L, x: x.reshape(-1),
    "unsqueeze": lambda L, x: x.unsqueeze(0),
    "slice": lambda L, x: x[..., :1],
    "expand": lambda L, x: x.unsqueeze(0).expand(2, *x.shape),
}
TABLES = {"unary": UNARY, "binary": BINARY, "reduce": REDUCE, "shape": SHAPE}

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


def _out_shape(kind, name, s, extra):
    """The result shape of one drawn op on a (meta, no data) torch tensor of shape ``s``."""
    x = torch.empty(s, dtype=torch.float64, device="meta")
    fn = TABLES[kind][name]
    return tuple((fn(torch, x, *extra) if extra is not None else fn(torch, x)).shape)


def _build(data, shapes):
    """Draw a program; return ``run(xs, lib)`` evaluating it on funcgrad or torch tensors."""
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
            prog.append(("reduce", name, (i,), (d, k), cut))
            pool_shapes.append(_out_shape("reduce", name, s, (d, k)))
            continue
        if kind == "shape" and len(s) >= 1:
            name = data.draw(st.sampled_from(sorted(SHAPE)), label="shape")
            prog.append(("shape", name, (i,), None, cut))
            pool_shapes.append(_out_shape("shape", name, s, None))
            continue
        name = data.draw(st.sampled_from(sorted(UNARY)), label="unary")
        prog.append(("unary", name, (i,), None, cut))
        pool_shapes.append(s)
    weights = [data.draw(st.sampled_from([0.0, 0.5, 1.0]), label="w") for _ in pool_shapes]
    weights[-1] = 1.0

    def run(xs, lib):
        pool = list(xs)
        for kind, name, ops, extra, cut in prog:
            args = [pool[k] for k in ops]
            fn = TABLES[kind][name]
            call = (lambda: fn(lib, *args, *extra)) if extra is not None else (lambda: fn(lib, *args))
            if cut == "no_grad":
                with lib.no_grad():
                    r = call()
            elif cut == "detach":
                r = call().detach()
            else:
                r = call()
            pool.append(r)
        total = 0.0
        for w, v in zip(weights, pool):
            if w:
                total = total + w * (v * v).sum()
        return total

    return prog, run


def _grads(lib, arrays, run):
    """(forward value, [leaf .grad as numpy or None], [grad dtype names]) of the program on ``lib``."""
    xs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    out = run(xs, lib)
    if isinstance(out, lib.Tensor) and out.requires_grad:
        out.backward()
    grads = [None if x.grad is None else x.grad.detach().numpy() for x in xs]
    dtypes = [None if x.grad is None else str(x.grad.dtype).split(".")[-1] for x in xs]
    return float(out.detach()) if isinstance(out, lib.Tensor) else out, grads, dtypes


@settings(settings.get_profile(PROFILE))
@given(shapes=leaf_shapes(), data=st.data(), seed=st.integers(0, 2**16))
def test_random_graph_gradients_match_torch(shapes, data, seed):
    EXAMPLES_RUN[0] += 1
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1.0, 1.0, s) for s in shapes]
    prog, run = _build(data, shapes)
    out, got, dtypes = _grads(funcgrad, arrays, run)
    t_out, expected, _ = _grads(torch, arrays, run)
    for g, d, e in zip(got, dtypes, expected):
        assert g is None or d == "float64"
        # a leaf the output does not depend on: None in one library, zeros in the other is the same
        g = np.zeros_like(e) if g is None and e is not None else g
        e = np.zeros_like(g) if e is None and g is not None else e
        if g is not None:
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12, err_msg=str(prog))
    # the forward values agree too
    np.testing.assert_allclose(out, t_out, rtol=1e-12)


def test_examples_were_run():
    """The property test above really ran its examples (reported by ``pytest -s``)."""
    print(f"\n[hypothesis] profile {PROFILE}: {EXAMPLES_RUN[0]} examples")
    assert EXAMPLES_RUN[0] >= settings.get_profile(PROFILE).max_examples or EXAMPLES_RUN[0] == 0
