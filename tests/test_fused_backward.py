"""The fused backward (autograd/fused.py): a plain graph runs as one cached XLA program (from its
first sighting) with the engine's results (to float rounding) and its errors."""

import numpy as np
import pytest

import funcgrad as torch
from funcgrad import nn
from funcgrad.autograd import fused


def _mlp_grads(steps, monkeypatch=None, max_nodes=None):
    if monkeypatch is not None:
        monkeypatch.setattr(fused, "MAX_NODES", max_nodes)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).double()
    x = torch.randn(4, 5, dtype=torch.float64)
    y = torch.randint(0, 3, (4,))
    out = []
    for i in range(steps):
        if i % 2 == 0:  # accumulate over two steps, then reset, as a user would
            model.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x * (i + 1)), y)
        loss.backward()
        out.append([p.grad.numpy().copy() for p in model.parameters()])
    return out


def test_fused_equals_node_by_node(monkeypatch):
    fused._SEEN.clear()
    want = _mlp_grads(6, monkeypatch, max_nodes=0)  # MAX_NODES=0: the engine runs every node
    assert not fused._SEEN
    got = _mlp_grads(6, monkeypatch, max_nodes=512)
    assert any(callable(v) for v in fused._SEEN.values())  # the fused program was used
    for g_step, w_step in zip(got, want):
        for g, w in zip(g_step, w_step):
            # one XLA program may fuse (and so round) differently from separate kernels: 1 ulp
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def _repeat(build, n=3):
    for _ in range(n - 1):
        build()[0].backward()
    return build()


def test_fused_keeps_version_check_and_freed_error():
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def build():
        y = x * x
        return (y * x).sum(), y
    loss, y = _repeat(build)
    y.add_(1)  # y was saved by the second mul
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    loss, _ = build()
    loss.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_fused_skips_hooks_and_retain_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def build():
        h = x * 3
        return (h * h).sum(), h
    _repeat(build)
    x.grad = None
    loss, h = build()
    h.register_hook(lambda g: g * 0)
    loss.backward()
    assert x.grad.tolist() == [0.0, 0.0]
    x.grad = None
    loss, h = build()
    h.retain_grad()
    loss.backward()
    assert h.grad.tolist() == [6.0, 12.0] and x.grad.tolist() == [18.0, 36.0]


# Nodes with several outputs (``_out_avals``): BatchNorm's, var_mean's, aminmax's. They are fused
# too (one program for a CNN's backward instead of a kernel per node); an output nothing used
# gets zeros, as in the engine.
_MULTI = [  # (name, loss of x) with x float64 of shape (4, 3)
    ("var_mean both", lambda t, x: (lambda v, m: (v * m).sum())(*t.var_mean(x, dim=0))),
    ("var_mean var only", lambda t, x: t.var_mean(x, dim=1)[0].sum()),
    ("var_mean mean only", lambda t, x: (t.var_mean(x, dim=0)[1] ** 2).sum()),
    ("aminmax max only", lambda t, x: (t.aminmax(x, dim=1).max * 3).sum()),
    ("aminmax both, shared", lambda t, x: (lambda r: (r.min * r.max + r.max).sum())(t.aminmax(x * x, dim=0))),
]


def _multi_grad(lib, fn):
    x = lib.tensor(_X_MULTI, dtype=lib.float64, requires_grad=True)
    fn(lib, x).backward()
    return x.grad.numpy()


_X_MULTI = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 1.0, 0.3], [0.1, 0.9, -1.2]]


@pytest.mark.torch
@pytest.mark.parametrize("name,fn", _MULTI, ids=[m[0] for m in _MULTI])
def test_fused_multi_output_nodes_match_torch(name, fn):
    pt = pytest.importorskip("torch")
    fused._SEEN.clear()
    got = _multi_grad(torch, fn)
    assert len(fused._SEEN) == 1  # the fused program ran, not the engine
    np.testing.assert_allclose(got, _multi_grad(pt, fn), rtol=1e-12, atol=1e-14)


def _cnn_grads(steps, monkeypatch, max_nodes):
    monkeypatch.setattr(fused, "MAX_NODES", max_nodes)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(27, 4)).double()
    x = torch.randn(2, 1, 8, 8, dtype=torch.float64)
    y = torch.randint(0, 4, (2,))
    out = []
    for _ in range(steps):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        out.append([p.grad.numpy().copy() for p in model.parameters()])
    return out


def test_fused_batchnorm_graph_equals_node_by_node(monkeypatch):
    fused._SEEN.clear()
    want = _cnn_grads(2, monkeypatch, max_nodes=0)  # the engine runs every node
    assert not fused._SEEN
    got = _cnn_grads(2, monkeypatch, max_nodes=512)
    assert len(fused._SEEN) == 1  # one program for the whole backward, BatchNorm's node included
    for g_step, w_step in zip(got, want):
        for g, w in zip(g_step, w_step):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-14)
