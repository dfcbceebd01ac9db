"""Random numbers: funcgrad's PyTorch-exact generator vs PyTorch eager, and inside a compiled step
the exact in-program mt19937 vs JAX's counter-based PRNG (``jax.random``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .core_bench import _time, _torch


def run() -> list[dict]:
    import funcgrad as fg
    torch = _torch()
    rows = []
    x = fg.randn(64, 4096)
    cases = [("randn(1000, 1000)", lambda m, x: m.randn(1000, 1000)),
             ("dropout mask 64x4096 (p=0.1)", lambda m, x: m.nn.functional.dropout(x, 0.1)),
             ("rand(1000, 1000)", lambda m, x: m.rand(1000, 1000)),
             ("randperm(60000)", lambda m, x: m.randperm(60000)),
             ("randperm(1000)", lambda m, x: m.randperm(1000))]
    for name, f in cases:
        rows.append(dict(bench=f"eager {name}", impl="funcgrad",
                         us=_time(lambda: jax.block_until_ready(f(fg, x)._value), 20) * 1e6))
        if torch is not None:
            tx = torch.randn(64, 4096)
            rows.append(dict(bench=f"eager {name}", impl="torch", us=_time(lambda: f(torch, tx), 20) * 1e6))

    # inside one compiled program: dropout on 64x4096 with the exact stream vs jax.random
    step = fg.jit(lambda x: fg.nn.functional.dropout(x, 0.1))
    rows.append(dict(bench="compiled dropout 64x4096", impl="funcgrad.jit (exact mt19937)",
                     us=_time(lambda: jax.block_until_ready(step(x)._value), 20) * 1e6))
    key = jax.random.PRNGKey(0)

    @jax.jit
    def jax_dropout(key, v):
        key, sub = jax.random.split(key)
        keep = jax.random.bernoulli(sub, 0.9, v.shape)
        return key, jnp.where(keep, v / 0.9, 0)
    xv = x._value
    state = [key]

    def jr():
        state[0], out = jax_dropout(state[0], xv)
        return jax.block_until_ready(out)
    rows.append(dict(bench="compiled dropout 64x4096", impl="jax.random (counter-based)",
                     us=_time(jr, 20) * 1e6, note="other numbers than PyTorch"))
    return rows
