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


def tiny_backward(n: int = 2000) -> list[dict]:
    """``(a*b).sum().backward()`` on 4×4: the per-op overhead case of the issue's target."""
    import funcgrad as fg
    rows = []
    a = fg.randn(4, 4, requires_grad=True)
    b = fg.randn(4, 4, requires_grad=True)

    def fg_step():
        a.grad = None
        b.grad = None
        (a * b).sum().backward()
        return a.grad

    av, bv = np.asarray(a.detach()._value), np.asarray(b.detach()._value)
    ja, jb = jnp.asarray(av), jnp.asarray(bv)
    fwd = jax.jit(lambda x, y: (x * y).sum())
    bwd = jax.jit(lambda x, y, g: jax.vjp(lambda x, y: (x * y).sum(), x, y)[1](g))
    one = jnp.ones((), ja.dtype)

    def jax_step():  # hand-written JAX with the same structure: a forward call and a jitted vjp
        fwd(ja, jb)
        return bwd(ja, jb, one)

    t_fg = _time(fg_step, n)
    t_jax = _time(jax_step, n)
    rows.append(dict(bench="eager (a*b).sum().backward() 4x4", impl="funcgrad", us=t_fg * 1e6))
    rows.append(dict(bench="eager (a*b).sum().backward() 4x4", impl="jax jit fwd + jit vjp", us=t_jax * 1e6))
    torch = _torch()
    if torch is not None:
        ta = torch.tensor(av, requires_grad=True)
        tb = torch.tensor(bv, requires_grad=True)

        def torch_step():
            ta.grad = None
            tb.grad = None
            (ta * tb).sum().backward()
        rows.append(dict(bench="eager (a*b).sum().backward() 4x4", impl="pytorch eager",
                         us=_time(torch_step, n) * 1e6))
    return rows


def per_op_overhead(n: int = 3000) -> list[dict]:
    """Eager dispatch cost of a unary, binary and reduction op on 4×4 vs a plain jitted call."""
    import funcgrad as fg
    x = fg.randn(4, 4)
    y = fg.randn(4, 4)
    xv, yv = x._value, y._value
    rows = []
    cases = [("unary exp", lambda: fg.exp(x), jax.jit(jnp.exp), (xv,)),
             ("binary mul", lambda: x * y, jax.jit(jnp.multiply), (xv, yv)),
             ("reduction sum(dim=1)", lambda: x.sum(1), jax.jit(lambda v: v.sum(1)), (xv,))]
    for name, fgf, jf, args in cases:
        t_fg = _time(fgf, n)
        t_j = _time(lambda: jf(*args), n)
        rows.append(dict(bench=f"per-op {name} 4x4", impl="funcgrad", us=t_fg * 1e6))
        rows.append(dict(bench=f"per-op {name} 4x4", impl="plain jax.jit", us=t_j * 1e6))
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


def run() -> list[dict]:
    return tiny_backward() + per_op_overhead() + compile_cost()
