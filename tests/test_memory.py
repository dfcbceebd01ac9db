"""Nothing leaked: saved values are released by backward, dropped graphs are collected (hooks,
retain_grad and module hooks make no uncollectable cycles), and long training loops — eager and
compiled — keep resident memory flat.

RSS: ``RSS_STEPS`` steps after a warm-up (2 000 in CI; set ``FUNCGRAD_RSS_STEPS=10000`` for the
issue's full local run). The growth is printed (``pytest -s`` shows it) and must stay under
``RSS_LIMIT_MB``.
"""

import collections
import gc
import os
import weakref

import numpy as np
import pytest

import funcgrad
from funcgrad import nn, optim
from funcgrad.autograd import grad as autograd_grad

RSS_STEPS = int(os.environ.get("FUNCGRAD_RSS_STEPS", "2000"))
RSS_WARMUP = 300
RSS_LIMIT_MB = 30.0


def _refs(*tensors):
    """Weak references to the tensors and to the jax arrays they hold."""
    out = []
    for t in tensors:
        out.append(weakref.ref(t))
        out.append(weakref.ref(t._value))
    return out


def _alive(refs):
    gc.collect()
    return sum(r() is not None for r in refs)


def _graph(x, w):
    """A small multi-path graph whose intermediates are all saved by some node."""
    h1 = x @ w
    h2 = h1.tanh()
    h3 = h2 * h1
    h4 = h3.exp() / (1.0 + h2 * h2)
    h5 = funcgrad.cat([h4, h3.sigmoid()], dim=1).log_softmax(dim=1)
    return (h1, h2, h3, h4, h5), (h5 * h5).mean()


def _saved(inter):
    """The intermediates some node saves (h4 feeds only ``cat``, linear: nothing saved)."""
    h1, h2, h3, h4, h5 = inter
    return h1, h2, h3, h5


# ---------------------------------------------------------------- release by backward
def test_backward_releases_every_saved_input():
    x = funcgrad.randn(4, 3)
    w = funcgrad.randn(3, 5, requires_grad=True)
    inter, loss = _graph(x, w)
    refs = _refs(*_saved(inter))
    del inter
    assert _alive(refs) == len(refs)  # held by the graph's saved inputs
    loss.backward()
    assert _alive(refs) == 0
    assert w.grad is not None


def test_autograd_grad_releases_saved_inputs():
    x = funcgrad.randn(4, 3, requires_grad=True)
    w = funcgrad.randn(3, 5, requires_grad=True)
    inter, loss = _graph(x, w)
    refs = _refs(*inter)
    del inter
    gx, gw = autograd_grad(loss, [x, w])
    assert _alive(refs) == 0
    assert gx.shape == x.shape and gw.shape == w.shape


def test_retain_graph_keeps_then_second_backward_releases():
    w = funcgrad.randn(3, 5, requires_grad=True)
    inter, loss = _graph(funcgrad.randn(4, 3), w)
    refs = _refs(*_saved(inter))
    del inter
    loss.backward(retain_graph=True)
    assert _alive(refs) == len(refs)
    loss.backward()
    assert _alive(refs) == 0


def test_create_graph_grads_do_not_keep_first_graph_after_release():
    x = funcgrad.randn(5, requires_grad=True)
    h = x.sin()
    refs = _refs(h)
    (g,) = autograd_grad((h * h).sum(), x, create_graph=True)
    del h
    g.sum().backward()
    del g
    assert _alive(refs) == 0


# ---------------------------------------------------------------- dropped graphs
def test_dropped_graph_with_self_referencing_hooks_is_collected():
    x = funcgrad.randn(4, requires_grad=True)
    h = x.exp()
    h.retain_grad()
    h.register_hook(lambda g: g * h.detach())  # closure -> h -> grad_fn -> hooks: a cycle
    y = (h * h).sum()
    y.register_hook(lambda g: g + 0 * y.detach())
    refs = _refs(h, y)
    del h, y
    assert _alive(refs) == 0
    assert x.grad is None


def test_dropped_graph_with_node_hooks_is_collected():
    x = funcgrad.randn(4, requires_grad=True)
    h = x * 3
    node = h.grad_fn
    node.register_hook(lambda gi, go: None)
    node.register_prehook(lambda go: None)
    refs = _refs(h) + [weakref.ref(node)]
    del h, node
    assert _alive(refs) == 0


def test_module_hooks_do_not_keep_activations():
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    seen = []
    model[0].register_forward_hook(lambda m, a, out: seen.append(weakref.ref(out)))
    model[1].register_forward_pre_hook(lambda m, a: None)
    model[2].register_full_backward_hook(lambda m, gi, go: None)
    model.register_forward_hook(lambda m, a, out: None)
    out = model(funcgrad.randn(4, 3))
    refs = _refs(out) + seen
    del out
    assert _alive(refs) == 0
    # and the same after a backward through the hooked modules
    out = model(funcgrad.randn(4, 3))
    refs = _refs(out) + seen[-1:]
    out.sum().backward()
    del out
    assert _alive(refs) == 0
    assert all(p.grad is not None for p in model.parameters())


def test_no_uncollectable_garbage_from_a_training_step():
    """gc finds no cycles after a step (plain reference counting frees everything)."""
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    x, t = funcgrad.randn(16, 3), funcgrad.randn(16, 1)

    def step():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), t)
        loss.backward()
        opt.step()

    step()
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            step()
        found = gc.collect()
    finally:
        gc.enable()
    assert found == 0, f"{found} objects were only reclaimable by the cycle collector"


# ---------------------------------------------------------------- RSS over long loops
def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _mlp():
    funcgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    return model, opt


def _growth(step, n):
    for _ in range(RSS_WARMUP):
        step()
    gc.collect()
    before = _rss_mb()
    for _ in range(n):
        step()
    gc.collect()
    return _rss_mb() - before


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_rss_flat_eager_training_loop():
    model, opt = _mlp()
    x, t = funcgrad.randn(32, 8), funcgrad.randn(32, 1)
    losses = []

    def step():
        opt.zero_grad()
        loss = ((model(x) - t) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if len(losses) > 4:
            losses.pop(0)

    grown = _growth(step, RSS_STEPS)
    print(f"\n[rss] eager: {RSS_STEPS} steps after {RSS_WARMUP} warm-up: {grown:+.1f} MB")
    assert grown < RSS_LIMIT_MB
    assert np.isfinite(losses[-1].item())


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_rss_flat_compiled_training_loop():
    model, opt = _mlp()
    x, t = funcgrad.randn(32, 8), funcgrad.randn(32, 1)

    @funcgrad.jit
    def step(x, t):
        opt.zero_grad()
        loss = ((model(x) - t) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    grown = _growth(lambda: step(x, t), RSS_STEPS)
    loss = step(x, t)
    print(f"\n[rss] compiled: {RSS_STEPS} steps after {RSS_WARMUP} warm-up: {grown:+.1f} MB "
          f"({step.num_traces} trace(s))")
    assert grown < RSS_LIMIT_MB
    assert step.num_traces <= 2 and np.isfinite(loss.item())


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_rss_flat_over_changing_batch_sizes_after_the_bound(monkeypatch):
    """A new batch size every step: once the per-shape LRU and the fused-program LRU are full,
    each new shape's executables replace the least recently used ones, so RSS stops growing
    (without the bounds this loop grew some MiB per size)."""
    from funcgrad import _cache
    from funcgrad.autograd import fused
    monkeypatch.setattr(_cache, "CHURN", 2)
    monkeypatch.setattr(_cache._SHAPED, "maxsize", 12)
    monkeypatch.setattr(_cache._SHAPED, "_warned", True)  # (the warning is tested in test_caches)
    monkeypatch.setattr(fused, "_CACHE_SIZE", 2)
    monkeypatch.setattr(fused, "_SEEN", collections.OrderedDict())
    monkeypatch.setattr(fused, "_WARNED", [True])
    w = funcgrad.ones(3, 2, requires_grad=True)

    def step(b):
        x = funcgrad.ones(b, 3)
        ((x @ w).tanh() * 0.5).sum().backward()
    rss = {}
    for b in range(1, 41):  # (the bounds are full after ~10 sizes: 25 new ones after that)
        step(b)
        if b in (15, 40):
            gc.collect()
            _cache._malloc_trim()
            rss[b] = _rss_mb()
    grown = rss[40] - rss[15]
    print(f"\n[rss] 25 new batch sizes after the bound: {grown:+.1f} MB; "
          f"{len(_cache._SHAPED)} per-shape executables, {len(fused._SEEN)} fused programs")
    assert len(_cache._SHAPED) <= 12 and len(fused._SEEN) <= 2
    assert grown < RSS_LIMIT_MB
    assert np.allclose(w.grad.numpy(), w.grad.numpy()[0, 0])


# ---------------------------------------------------------------- wide graphs
def test_10k_way_fan_in_backpropagates():
    """Sum of 10 000 products of one leaf (the 100 000-op chain is in test_core.py)."""
    x = funcgrad.tensor(2.0, requires_grad=True)
    total = x * 0.0
    for i in range(10_000):
        total = total + x * float(i % 3)
    total.backward()
    assert x.grad.item() == float(sum(i % 3 for i in range(10_000)))
