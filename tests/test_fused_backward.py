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
