"""Eager autograd overhead: funcgrad vs hand-written JAX (jitted vjp) vs PyTorch, side by side."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np


def _time(fn, n: int, repeat: int = 5) -> float:
    """Best-of-``repeat`` mean seconds per call (best-of filters out noise from other processes)."""
    for _ in range(max(10, n // 10)):
        fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best


def _torch():
    try:
        import torch
        return torch
    except Exception:
        return None


def _side_by_side(fns: dict, n: int, rounds: int = 40, clock=time.process_time) -> dict:
    """Seconds per call of each of ``fns``, timed in interleaved rounds (best of ``rounds``).

    The machine may be shared and its load changes from second to second: timing one function
    after the other puts each in another load; interleaving short rounds and keeping each one's
    best puts them in the same one, so their ratio means something. The clock is the process's
    CPU time (all its threads: XLA's and PyTorch's worker threads count too), which time slices
    given to other processes do not inflate.
    """
    for f in fns.values():
        for _ in range(max(10, n // 10)):
            f()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, f in fns.items():
            t = clock()
            for _ in range(n):
                f()
            best[name] = min(best[name], (clock() - t) / n)
    return best


def tiny_backward(n: int = 200) -> list[dict]:
    """``(a*b).sum().backward()`` on 4×4: the per-op overhead case of issue 17 (target ≤ 1.0×
    PyTorch eager), beside the three bare jitted calls funcgrad makes for it (``mul``, ``sum``
    and the backward program), which are the floor for any JAX-backed eager step."""
    import funcgrad as fg
    a = fg.randn(4, 4, requires_grad=True)
    b = fg.randn(4, 4, requires_grad=True)

    def fg_step():
        a.grad = None
        b.grad = None
        (a * b).sum().backward()
        return a.grad

    av, bv = np.asarray(a.detach()._value), np.asarray(b.detach()._value)
    ja, jb = jnp.asarray(av), jnp.asarray(bv)
    mul, total = jax.jit(jnp.multiply), jax.jit(jnp.sum)
    bwd = jax.jit(lambda x, y, g: jax.vjp(lambda x, y: (x * y).sum(), x, y)[1](g))
    one = jnp.ones((), ja.dtype)

    def jax_step():  # the same three XLA calls, without any Python around them
        total(mul(ja, jb))
        return bwd(ja, jb, one)

    fns = {"funcgrad": fg_step, "jax: 3 bare jitted calls": jax_step}
    torch = _torch()
    if torch is not None:
        ta = torch.tensor(av, requires_grad=True)
        tb = torch.tensor(bv, requires_grad=True)

        def torch_step():
            ta.grad = None
            tb.grad = None
            (ta * tb).sum().backward()
        fns = {"funcgrad": fg_step, "pytorch eager": torch_step, **fns}
    t = _side_by_side(fns, n)
    return [dict(bench="eager (a*b).sum().backward() 4x4", impl=k, us=v * 1e6) for k, v in t.items()]


def per_op_overhead(n: int = 300) -> list[dict]:
    """Eager dispatch cost of a unary, binary and reduction op on 4×4 vs a bare jitted call
    (target ≤ 1.3×), with and without an input that requires grad (recording a node); ``x + y``
    (PyTorch's add has alpha=1, a third operand) and ``x * 2.5`` against the same jitted call a
    JAX user writes (``jax.jit(jnp.multiply)(x, 2.5)``, which converts the Python float on
    every call; funcgrad passes a reused 0-d array)."""
    import funcgrad as fg
    x = fg.randn(4, 4)
    y = fg.randn(4, 4)
    xg = fg.randn(4, 4, requires_grad=True)
    xv, yv = x._value, y._value
    rows = []
    cases = [("unary exp", lambda: fg.exp(x), jax.jit(jnp.exp), (xv,)),
             ("binary mul", lambda: x * y, jax.jit(jnp.multiply), (xv, yv)),
             ("reduction sum(dim=1)", lambda: x.sum(1), jax.jit(lambda v: v.sum(1)), (xv,)),
             ("binary mul, records a node", lambda: xg * y, jax.jit(jnp.multiply), (xv, yv)),
             ("binary add x + y", lambda: x + y, jax.jit(jnp.add), (xv, yv)),
             ("mul by a Python float x * 2.5", lambda: x * 2.5, jax.jit(jnp.multiply), (xv, 2.5))]
    for name, fgf, jf, args in cases:
        t = _side_by_side({"funcgrad": fgf, "bare jax.jit": lambda: jf(*args)}, n)
        rows += [dict(bench=f"per-op {name} 4x4", impl=k, us=v * 1e6) for k, v in t.items()]
    return rows


def compile_cost() -> list[dict]:
    """Distinct XLA compilations and total compile time for a fresh 50-op script."""
    import funcgrad as fg
    from funcgrad._ops import OPS
    for op in OPS.values():  # start cold
        op._fwd.clear()
        op._bwd.clear()
    jax.clear_caches()
    count = [0]
    before = time.perf_counter()
    from jax import monitoring

    def listener(event, duration, **kw):
        if event == "/jax/compilation_cache/compile_requests_use_cache" or "backend_compile" in event:
            count[0] += 1
    monitoring.register_event_duration_secs_listener(listener)
    try:
        x = fg.randn(8, 8, requires_grad=True)
        w = fg.randn(8, 8, requires_grad=True)
        h = x
        for i in range(10):  # 5 ops per round = 50 ops
            h = (h @ w).tanh() * 0.5 + h.sigmoid()
            h = h - h.mean()
        h.sum().backward()
        elapsed = time.perf_counter() - before
    finally:
        monitoring.unregister_event_duration_listener(listener)
    return [dict(bench="first run of a 50-op script (fwd+bwd)", impl="funcgrad",
                 us=elapsed * 1e6, note=f"{count[0]} XLA compilations")]


_FIRST_STEP = r"""
import json, sys, time
lib, which = sys.argv[1], sys.argv[2]
n = [0]
if lib == "funcgrad":
    import jax
    jax.monitoring.register_event_duration_secs_listener(
        lambda e, d, **k: n.__setitem__(0, n[0] + (e == "/jax/core/compile/backend_compile_duration")))
    import funcgrad as torch
else:
    import torch
nn, F = torch.nn, torch.nn.functional
torch.manual_seed(0)
if which == "cnn":
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 14 * 14, 10))
    x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))
elif which == "transformer":
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True)
    model = nn.Sequential(nn.TransformerEncoder(layer, 2), nn.Linear(64, 10), nn.Flatten(0, 1))
    x, y = torch.randn(8, 16, 64), torch.randint(0, 10, (8 * 16,))
else:
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
c0, t, tc = n[0], time.perf_counter(), time.process_time()
opt.zero_grad()
loss = F.cross_entropy(model(x), y)
loss.backward()
opt.step()
loss.item()
print(json.dumps(dict(wall=time.perf_counter() - t, cpu=time.process_time() - tc, compiles=n[0] - c0)))
"""


def first_step_cold() -> list[dict]:
    """The first training step of a fresh process (nothing compiled, no persistent compilation
    cache): a small CNN (Conv2d→BatchNorm2d→ReLU→MaxPool2d→Linear, B=32), an MLP
    784-256-256-10 (B=64) and a Transformer encoder (2 layers, d_model 64, 4 heads, seq 16, B=8,
    a token-wise Linear head), Adam, with the number of XLA compilations it triggers, vs PyTorch."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    import funcgrad
    root = os.path.dirname(os.path.dirname(os.path.abspath(funcgrad.__file__)))
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
                   XDG_CACHE_HOME=cache, JAX_ENABLE_COMPILATION_CACHE="false")
        for which, name in [("cnn", "small CNN B=32"), ("mlp", "MLP 784-256-256-10 B=64"),
                            ("transformer", "Transformer encoder 2x(d 64, 4 heads) seq 16 B=8")]:
            for lib in ["funcgrad"] + (["torch"] if _torch() is not None else []):
                out = subprocess.run([sys.executable, "-c", _FIRST_STEP, lib, which], env=env,
                                     capture_output=True, text=True, timeout=600)
                if out.returncode:
                    raise RuntimeError(out.stderr[-2000:])
                r = json.loads(out.stdout.strip().splitlines()[-1])
                note = f"cpu {r['cpu']:.2f} s" + (f", {r['compiles']} XLA compilations" if lib == "funcgrad" else "")
                rows.append(dict(bench=f"cold first training step, {name}, Adam",
                                 impl="funcgrad" if lib == "funcgrad" else "pytorch eager",
                                 us=r["wall"] * 1e6, note=note))
    return rows


def run() -> list[dict]:
    return tiny_backward() + per_op_overhead() + compile_cost() + first_step_cold()
