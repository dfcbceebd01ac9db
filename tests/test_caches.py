"""Compile-cost behaviour: linear-cost cat/stack fan-in, bounded kernel caches, the persistent
compilation cache. Nothing here is timed: costs are counted (XLA compilations, cache entries)."""

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import funcgrad
from funcgrad import _cache
from funcgrad._ops import _fanin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Compiles:
    """Counts XLA backend compilations (jax's monitoring event) while active."""

    def __init__(self):
        self.n = 0
        self.on = False
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, name, _secs, **_kw):
        if self.on and name == "/jax/core/compile/backend_compile_duration":
            self.n += 1

    def __enter__(self):
        self.n, self.on = 0, True
        return self

    def __exit__(self, *exc):
        self.on = False


_COMPILES = _Compiles()


# ---- cat / stack fan-in ------------------------------------------------------------------------
N_BIG = 3 * _fanin.CHUNK + 5  # past CHUNK: the chunked forward and the sliced backward


def _fanin_case(torch_mod, op, n, dim, dtypes, grads_for):
    """n tensors of shape (2, 3) (cat: size 1+i%3 along dim) and their op's weighted sum."""
    rs = np.random.RandomState(0)
    xs = []
    for i in range(n):
        shape = [2, 3]
        if op == "cat":
            shape[dim] = 1 + i % 3
        dt = dtypes[i % len(dtypes)]
        a = rs.randn(*shape).astype(np.float32)
        xs.append(torch_mod.tensor(a, dtype=getattr(torch_mod, dt), requires_grad=grads_for(i)))
    y = getattr(torch_mod, op)(xs, dim=dim)
    w = torch_mod.tensor(rs.randn(*y.shape).astype(np.float32))
    (y * w).sum().backward()
    return y, xs


FANIN_SPECS = [  # (op, n, dim, operand dtypes, which operands require grad)
    ("cat", N_BIG, 0, ("float32",), lambda i: True),
    ("cat", N_BIG, 1, ("float32", "float64"), lambda i: i % 4 != 1),
    ("stack", N_BIG, 0, ("float32",), lambda i: True),
    ("stack", N_BIG, 2, ("float16", "float32"), lambda i: i % 3 == 0),
    ("cat", 7, 1, ("float32",), lambda i: True),  # below CHUNK: the single kernel, for reference
]


@pytest.mark.torch
@pytest.mark.parametrize("op,n,dim,dtypes,grads_for", FANIN_SPECS)
def test_fanin_matches_torch(op, n, dim, dtypes, grads_for):
    torch = pytest.importorskip("torch")
    y, xs = _fanin_case(funcgrad, op, n, dim, dtypes, grads_for)
    ty, txs = _fanin_case(torch, op, n, dim, dtypes, grads_for)
    assert y.dtype.name == str(ty.dtype).split(".")[1] and tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
    for x, tx in zip(xs, txs):
        if tx.grad is None:
            assert x.grad is None
        else:
            assert x.grad.dtype.name == str(tx.grad.dtype).split(".")[1]
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_fanin_compiles_do_not_grow_with_n(op):
    """Twice the operands (same shapes): not one more compilation, forward or backward."""
    def run(n):
        xs = [funcgrad.full((3,), i + 1.0, requires_grad=True) for i in range(n)]
        with _COMPILES as c:
            y = getattr(funcgrad, op)(xs)
            y.backward(funcgrad.ones_like(y))
        assert all(x.grad is not None for x in xs)
        return c.n
    run(4 * _fanin.CHUNK)  # warm the kernels of the row's shapes
    # a new N needs only its remainder chunk and the new total's slice kernel: a constant
    first, second = run(6 * _fanin.CHUNK + 1), run(12 * _fanin.CHUNK + 1)
    assert second <= first <= 12, (first, second)
    # and no XLA program spans all N operands (XLA's compile time is superlinear in them)
    o = funcgrad._ops._registry.OPS[op]
    for key, k in list(o._fwd.items()) + list(o._bwd.items()):
        if hasattr(k, "lower"):  # a jitted kernel (the chunked drivers are plain functions)
            assert key[2] <= _fanin.CHUNK, key[2]


def test_fanin_double_backward():
    """create_graph through a wide cat still gives second derivatives (d²/dx² of sum(cat(x²)³))."""
    xs = [funcgrad.tensor([float(i % 5) + 1.0], requires_grad=True) for i in range(_fanin.CHUNK + 3)]
    y = (funcgrad.cat([x * x for x in xs]) ** 3).sum()
    gs = funcgrad.autograd.grad(y, xs, create_graph=True)
    g2 = funcgrad.autograd.grad(sum(g.sum() for g in gs[:3]), xs[:3])
    for x, g, h in zip(xs, gs, g2):
        v = float(x)
        assert float(g) == pytest.approx(6 * v ** 5) and float(h) == pytest.approx(30 * v ** 4)
