"""Compile-cost behaviour: linear-cost cat/stack fan-in, bounded kernel caches, the persistent
compilation cache. Nothing here is timed: costs are counted (XLA compilations, cache entries)."""

import collections
import json
import os
import subprocess
import sys
import textwrap
import threading
import warnings

import jax
import numpy as np
import pytest

import funcgrad
from funcgrad import _cache, _compile_cache, _dispatch, nn
from funcgrad.autograd import fused
from funcgrad._ops import _fanin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Compiles:
    """Counts XLA backend compilations (jax's monitoring event) while active, made by the thread
    that entered it: an optimizer's update compiled ahead on funcgrad's background thread
    (``funcgrad._ahead``) is not a compile of the code being counted."""

    def __init__(self):
        self.n = 0
        self.on = False
        self.thread = None
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, name, _secs, **_kw):
        if self.on and name == "/jax/core/compile/backend_compile_duration" \
                and threading.get_ident() == self.thread:
            self.n += 1

    def __enter__(self):
        self.n, self.on, self.thread = 0, True, threading.get_ident()
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


# ---- persistent compilation cache --------------------------------------------------------------
_SCRIPT = textwrap.dedent("""
    import json, os, sys, warnings
    import jax
    ev = {}
    jax.monitoring.register_event_listener(lambda name, **kw: ev.__setitem__(name, ev.get(name, 0) + 1))
    import funcgrad
    out = {"dir": funcgrad.compilation_cache_dir(),
           "min_time": jax.config.jax_persistent_cache_min_compile_time_secs}
    x = funcgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [[2.0, 4.0], [6.0, 8.0]]
    out["hits"] = ev.get("/jax/compilation_cache/cache_hits", 0)
    out["writes"] = ev.get("/jax/compilation_cache/cache_misses", 0)
    out["requests"] = ev.get("/jax/compilation_cache/compile_requests_use_cache", 0)
    if len(sys.argv) > 1:  # the runtime API: an unwritable dir (twice), then a good one
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out["bad"] = [funcgrad.set_compilation_cache(sys.argv[1]) for _ in range(2)]
        out["warnings"] = [str(m.message) for m in w]
        out["good"] = funcgrad.set_compilation_cache(sys.argv[2])
        (x * 3.0).sum().backward()
        out["writes_after"] = ev.get("/jax/compilation_cache/cache_misses", 0)
        from funcgrad import _compile_cache as cc
        for _ in range(cc._REJECT_AFTER):  # hits that load as slowly as compiling: jax issue 38445
            cc._note_hit(0.2, 0.15)
        out["after_reject"] = funcgrad.compilation_cache_dir()
        out["marker"] = os.path.exists(os.path.join(sys.argv[2], cc.REJECTED_MARKER))
        out["again"] = funcgrad.set_compilation_cache(sys.argv[2])
    print(json.dumps(out))
""")


def _run(env, *args):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("FUNCGRAD_CACHE", "JAX_COMPILATION"))}
    e.update(env, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-W", "error", "-c", _SCRIPT, *args], env=e, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _entries(d):
    return sorted(f for f in os.listdir(d) if f.endswith("-cache")) if os.path.isdir(d) else []


def test_persistent_cache_cold_then_warm(tmp_path):
    d = str(tmp_path / "c")
    cold = _run({"FUNCGRAD_CACHE_DIR": d})
    assert cold["dir"] == d and cold["min_time"] == 0.0
    assert cold["hits"] == 0 and cold["writes"] == cold["requests"] > 0
    assert len(_entries(d)) == cold["writes"]
    warm = _run({"FUNCGRAD_CACHE_DIR": d})
    assert warm["hits"] == warm["requests"] == cold["requests"] and warm["writes"] == 0


def test_persistent_cache_off_unwritable_rejected(tmp_path):
    (tmp_path / "file").write_text("")
    bad, good = str(tmp_path / "file" / "sub"), str(tmp_path / "good")
    r = _run({"FUNCGRAD_CACHE": "0", "XDG_CACHE_HOME": str(tmp_path / "xdg")}, bad, good)
    assert r["dir"] is None and r["hits"] == r["writes"] == 0 and not (tmp_path / "xdg").exists()
    assert r["bad"] == [None, None] and len(r["warnings"]) == 1 and "not writable" in r["warnings"][0]
    assert r["good"] == good and r["writes_after"] > 0 and _entries(good)
    assert r["after_reject"] is None and r["marker"] and r["again"] is None


def test_persistent_cache_leaves_users_jax_config(tmp_path):
    d = str(tmp_path / "mine")
    r = _run({"JAX_COMPILATION_CACHE_DIR": d})
    assert r["dir"] is None and r["min_time"] == 1.0  # jax's own defaults: not funcgrad's


def test_default_dir_is_per_version_and_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    d = _compile_cache.default_dir()
    assert os.path.dirname(d) == str(tmp_path / "funcgrad")
    assert os.path.basename(d).startswith(f"jax-{jax.__version__}-jaxlib-")


def test_file_cache_trims_least_recently_read(tmp_path):
    c = _compile_cache._FileCache(str(tmp_path), max_bytes=1000)
    for i in range(8):
        c.put(f"k{i}", bytes(192))  # 200 bytes on disk, with the 8-byte header
        os.utime(tmp_path / f"k{i}-cache", ns=(i * 10**9, i * 10**9))
    os.utime(tmp_path / "k0-cache", ns=(100 * 10**9,) * 2)  # k0 read last: kept
    assert c.get("k0") == bytes(192) and c.get("missing") is None
    assert c.trim() == 4  # 1600 bytes -> at most 800
    assert _entries(str(tmp_path)) == ["k0-cache", "k5-cache", "k6-cache", "k7-cache"]
    c.put("k0", b"other")  # an existing entry is never rewritten
    assert c.get("k0") == bytes(192)


_HITS_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import jax
    from funcgrad import _compile_cache as cc
    seen = []
    note = cc._note_hit
    cc._note_hit = lambda compiled, secs: (seen.append(compiled), note(compiled, secs))
    import funcgrad
    x = funcgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (x.exp() * x).sum().backward()
    out = {"dir": funcgrad.compilation_cache_dir(), "recorded": list(seen)}
    # JAX's numbers for a hit of a program that compiled in under a second (it records whole
    # seconds): compile time saved = 0 - retrieval. The detector must not read them.
    for _ in range(2 * cc._REJECT_AFTER):
        jax.monitoring.record_event_duration_secs("/jax/compilation_cache/compile_time_saved_sec", -0.01)
        jax.monitoring.record_event_duration_secs("/jax/compilation_cache/cache_retrieval_time_sec", 0.01)
    for _ in range(2 * cc._REJECT_AFTER):  # a small program's slow load, an entry without a time
        cc._note_hit(cc._DECISIVE / 2, 0.05)
        cc._note_hit(None, 1.0)
    out["after_small"] = funcgrad.compilation_cache_dir()
    for _ in range(cc._REJECT_AFTER - 1):  # recompiled on load, but a real load in between...
        cc._note_hit(0.2, 0.15)
    cc._note_hit(0.2, 0.002)
    for _ in range(cc._REJECT_AFTER - 1):
        cc._note_hit(0.2, 0.15)
    out["after_interrupted"] = funcgrad.compilation_cache_dir()
    cc._note_hit(0.2, 0.15)  # ...and 16 in a row
    out["after_rejected"] = funcgrad.compilation_cache_dir()
    print(json.dumps(out))
""")


def _run_hits(d):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("FUNCGRAD_CACHE", "JAX_COMPILATION"))}
    e.update(FUNCGRAD_CACHE_DIR=d, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-W", "error", "-c", _HITS_SCRIPT], env=e, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_rejection_is_judged_on_the_recorded_compile_time(tmp_path):
    """jax issue 38445's detector: each entry records its program's compile time (ms), a hit is
    judged against it; JAX's own number (whole seconds, 0 for a small kernel) made any 16 hits
    that took over 2 ms to load mark a healthy cache rejected. A marker written by that detector
    is void and removed."""
    d = str(tmp_path / "c")
    os.makedirs(d)
    open(os.path.join(d, _compile_cache._OLD_MARKER), "w").close()
    cold = _run_hits(d)
    assert cold["dir"] == d and cold["recorded"] == []  # cold: no hits
    assert not os.path.exists(os.path.join(d, _compile_cache._OLD_MARKER))
    heads = []
    for f in _entries(d):
        with open(os.path.join(d, f), "rb") as fh:
            heads.append(fh.read(8))
    assert heads and all(h[:4] == _compile_cache._HEADER for h in heads)
    assert max(int.from_bytes(h[4:], "big") for h in heads) > 0  # milliseconds, not seconds
    os.unlink(os.path.join(d, _compile_cache.REJECTED_MARKER))
    warm = _run_hits(d)
    assert len(warm["recorded"]) == len(heads) and all(c is not None for c in warm["recorded"])
    assert sorted(warm["recorded"]) == sorted(int.from_bytes(h[4:], "big") / 1000 for h in heads)
    assert warm["after_small"] == warm["after_interrupted"] == d and warm["after_rejected"] is None


# ---- bounded kernel caches ---------------------------------------------------------------------
# Compilations are counted as traces of the kernel's own function (a persistent-cache hit skips
# the XLA compile, not the trace): a shape is traced again exactly when it was evicted.
def _counting_op(name):
    traced = []

    def fn(x):
        traced.append(tuple(x.shape))
        return x * 3.0 + 1.0
    return _dispatch.Op(name, fn, "CacheTestBackward0", promote="float"), traced


@pytest.fixture
def small_bound(monkeypatch):
    """Per-shape mode after 2 shapes, 4 executables in the per-shape LRU, warnings re-armed."""
    monkeypatch.setattr(_cache, "CHURN", 2)
    monkeypatch.setattr(_cache._SHAPED, "maxsize", 4)
    monkeypatch.setattr(_cache, "MAX_PROGRAMS", 3)
    monkeypatch.setattr(fused, "_CACHE_SIZE", 3)
    monkeypatch.setattr(fused, "_SEEN", collections.OrderedDict())  # none of earlier tests' programs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # evictions of what earlier tests compiled
        funcgrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
        data = {b: (funcgrad.randn(b, 5), funcgrad.randint(0, 3, (b,))) for b in range(1, 15)}
    monkeypatch.setattr(_cache._SHAPED, "_warned", True)  # re-armed by the tests that expect it
    monkeypatch.setattr(fused, "_WARNED", [])  # the one-time warning, re-armed
    yield model, data


def test_kernel_stays_plain_jit_while_shapes_are_stable(small_bound):
    op, traced = _counting_op("cache_stable")
    for _ in range(3):
        for n in (4, 5):  # a DataLoader's full and last batch: two shapes, no per-shape mode
            _dispatch.apply(op, funcgrad.tensor(np.ones(n, np.float32)))
    assert traced == [(4,), (5,)]
    (k,) = op._fwd.values()
    assert type(k) is not _cache.ShapeKernel  # the eager hot path calls jax.jit directly


def test_eviction_is_lru_per_shape_and_warns_once_naming_shapes(small_bound, monkeypatch):
    monkeypatch.setattr(_cache._SHAPED, "_warned", False)
    op, traced = _counting_op("cache_lru")
    run = lambda n: _dispatch.apply(op, funcgrad.tensor(np.arange(n, dtype=np.float32))).numpy()  # noqa: E731
    first = {n: run(n) for n in (1, 2, 3)}  # the 3rd trace switches the kernel to per-shape
    assert type(next(iter(op._fwd.values()))) is _cache.ShapeKernel
    with pytest.warns(UserWarning, match=r"more than 4 eager kernel executables .* latest was "
                      r"cache_lru\(float32\[\d+\]\), the evicted one \w+\("):
        for n in range(4, 12):  # 8 new sizes, size 1 used between each: it is never the LRU
            run(n)
            np.testing.assert_array_equal(run(1), first[1])
    assert traced.count((1,)) == 2  # once as a plain jit, once per-shape: never evicted
    assert all(traced.count((n,)) == 1 for n in range(4, 12))
    assert len([k for k in _cache._SHAPED.keys() if k[0] is op._fwd[next(iter(op._fwd))]]) <= 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once
        np.testing.assert_array_equal(run(2), first[2])  # evicted: recompiled, same values
        np.testing.assert_array_equal(run(3), first[3])
    assert traced.count((2,)) == 2 and traced.count((3,)) == 2


def test_static_argument_kernels_go_per_shape_and_are_bounded(small_bound, monkeypatch):
    """``x.view(b, -1)`` for a new ``b`` each step: a kernel per static value, each compiled
    once (never churning by itself). Past STATIC_CHURN of them the op's new kernels are
    per-shape (bounded by the LRU, not by clearing every cache), and the op's dict is bounded."""
    monkeypatch.setattr(_cache, "STATIC_CHURN", 3)
    monkeypatch.setattr(_cache, "OP_KERNELS", 6)
    traced = []

    def fn(x, rows):
        traced.append(rows)
        return x.reshape(rows, -1) * 2.0
    op = _dispatch.Op("cache_static", fn, "CacheStaticBackward0", promote="float")
    run = lambda b: _dispatch.apply(op, funcgrad.ones(b * 2), rows=b).numpy()  # noqa: E731
    for b in range(1, 13):
        np.testing.assert_array_equal(run(b), np.full((b, 2), 2.0, np.float32))
    assert traced == list(range(1, 13))
    kinds = [type(k) is _cache.ShapeKernel for k in op._fwd.values()]
    assert kinds == [False] * 3 + [True] * 3  # the first 3 plain, the newest per-shape ones kept
    assert len([k for k in _cache._SHAPED.keys() if k[0].label == "cache_static"]) <= 4
    np.testing.assert_array_equal(run(1), np.full((1, 2), 2.0, np.float32))  # a plain one: cached
    assert traced.count(1) == 1


def test_inference_only_loop_is_bounded(small_bound, monkeypatch):
    """No backward() ever runs: the kernels bound themselves as they compile."""
    monkeypatch.setattr(_cache._SHAPED, "_warned", False)
    model, data = small_bound
    xs = {b: x for b, (x, _) in data.items()}
    with funcgrad.no_grad(), pytest.warns(UserWarning, match=r"eager kernel executables.*latest was "
                                          r"\w+\(float32\["):
        ref = {b: model(xs[b]).numpy() for b in (1, 2)}
        for b in range(1, 15):
            out = model(xs[b])
    assert out.shape == (14, 3)
    assert len(_cache._SHAPED) <= 4
    with funcgrad.no_grad():
        for b in (1, 2):  # evicted long ago: recompiled, same values
            np.testing.assert_array_equal(model(xs[b]).numpy(), ref[b])


def test_fused_backward_programs_lru_same_gradients(small_bound):
    model, data = small_bound

    def grads(b):
        model.zero_grad()
        x, y = data[b]
        nn.functional.cross_entropy(model(x), y).backward()
        return [p.grad.numpy().copy() for p in model.parameters()]
    first = grads(1)
    with pytest.warns(UserWarning, match=r"more than 3 fused backward programs .*the backward of \d+ "
                      r"ops \(.*\) with shapes"):
        for b in range(2, 9):
            grads(b)
            for a, r in zip(grads(1), first):  # b=1 used between each: kept
                np.testing.assert_array_equal(a, r)
    assert len(fused._SEEN) <= 3


def test_compiled_step_programs_lru(small_bound):
    model, data = small_bound
    seen = []

    @funcgrad.jit(warn_after=100)
    def step(x):
        seen.append(tuple(x.shape))
        return model(x).sum()
    xs = {b: x for b, (x, _) in data.items()}
    first = step(xs[1]).item()
    with pytest.warns(UserWarning, match=r"more than 3 programs of the compiled step .*step.* inputs "
                      r"\(float32\[\d+, 5\]\)"):
        for b in range(2, 9):
            step(xs[b])
            assert step(xs[1]).item() == first  # used between each: never retraced
    assert seen.count((1, 5)) == 1 and len(step._entries) <= 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once
        v2 = step(xs[2]).item()  # evicted: traced again, same value as eager
    assert seen.count((2, 5)) == 2
    assert v2 == pytest.approx(model(xs[2]).sum().item(), rel=1e-6)


def test_sweep_below_bound_keeps_kernels():
    _dispatch.apply(_counting_op("cache_keep")[0], funcgrad.ones(2))
    before = _cache.executables()
    assert before and not _cache.sweep(limit=10**9)
    assert _cache.executables() == before


def _backend_compiles(fn):
    n = [0]

    def on(name, _secs, **_kw):
        n[0] += name == "/jax/core/compile/backend_compile_duration"
    jax.monitoring.register_event_duration_secs_listener(on)
    try:
        fn()
    finally:
        jax.monitoring.unregister_event_duration_listener(on)
    return n[0]


def test_random_draws_of_a_new_shape_compile_nothing():
    """Host-drawn samples reach the device by a transfer: a new batch size of ``randn`` /
    ``randint`` in an already compiled size bucket compiles nothing (``jnp.asarray`` of a numpy
    array compiled a convert per shape). The values are the recorded PyTorch ones
    (tests/test_random.py)."""
    funcgrad.randn(37, 3), funcgrad.randint(0, 4, (37,))  # (the 128-word bucket, compiled)
    assert _backend_compiles(lambda: (funcgrad.randn(38, 3), funcgrad.randint(0, 4, (38,)))) == 0


def test_compiled_step_loop_sweeps_when_due():
    """A compiled loop never reaches the eager safe point (its backward() runs inside the trace):
    the step's call is a safe point itself once a sweep is due."""
    w = funcgrad.ones(3, requires_grad=True)

    @funcgrad.jit
    def step(x):
        (w * x).sum().backward()
        return w.grad
    step(funcgrad.ones(3))
    try:
        _cache._sweep["due"] = True
        step(funcgrad.ones(3))  # (cached: no trace, no backward())
        assert _cache._sweep["due"] is False
    finally:
        _cache._sweep["due"] = False
