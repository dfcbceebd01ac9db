"""Compile-cost behaviour: linear-cost cat/stack fan-in, bounded kernel caches, the persistent
compilation cache. Nothing here is timed: costs are counted (XLA compilations, cache entries)."""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import jax
import numpy as np
import pytest

import funcgrad
from funcgrad import _cache, _compile_cache
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
            cc._note_hit(0.0, 0.05)
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
        c.put(f"k{i}", bytes(200))
        os.utime(tmp_path / f"k{i}-cache", ns=(i * 10**9, i * 10**9))
    os.utime(tmp_path / "k0-cache", ns=(100 * 10**9,) * 2)  # k0 read last: kept
    assert c.get("k0") == bytes(200) and c.get("missing") is None
    assert c.trim() == 4  # 1600 bytes -> at most 800
    assert _entries(str(tmp_path)) == ["k0-cache", "k5-cache", "k6-cache", "k7-cache"]
    c.put("k0", b"other")  # an existing entry is never rewritten
    assert c.get("k0") == bytes(200)


# ---- bounded kernel caches ---------------------------------------------------------------------
def _step(w, b):
    x = funcgrad.ones(b, 3) * 0.5
    (x @ w).tanh().sum().backward()


def test_kernel_bound_sweeps_with_one_warning(monkeypatch):
    """Counting entries, not memory: past the bound the next backward() clears the kernels'
    executables (once warned, naming the kernels compiled for most shapes); they stay bounded."""
    monkeypatch.setattr(_cache, "SWEEP_EVERY", 4)
    monkeypatch.setattr(_cache, "MAX_EXECUTABLES", 12)
    monkeypatch.setitem(_cache._sweep, "warned", False)
    w = funcgrad.ones(3, 2, requires_grad=True)
    sweeps0 = _cache._sweep["sweeps"]
    held = []
    with pytest.warns(UserWarning, match=r"compiled kernels are held .*most input shapes are: \w+"):
        for b in range(1, 16):  # 15 batch sizes: every op compiles for each
            _step(w, b)
            held.append(sum(n for n, _ in _cache.executables()))
    assert _cache._sweep["sweeps"] > sweeps0
    # between sweeps at most SWEEP_EVERY more compilations than the bound, never growing with b
    assert max(held[-6:]) <= 12 + 4 * 3, held
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning came once
        for b in range(16, 22):
            _step(w, b)
    assert w.grad is not None and np.allclose(w.grad.numpy()[0], w.grad.numpy()[0][0])


def test_sweep_below_bound_keeps_kernels():
    _step(funcgrad.ones(3, 2, requires_grad=True), 2)
    before = _cache.executables()
    assert before and not _cache.sweep(limit=10**9)
    assert _cache.executables() == before
