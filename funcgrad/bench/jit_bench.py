"""Benchmarks of the jit bridge (``funcgrad.jit``), side by side in one run.

1. MLP 784-512-512-10, batch 128, Adam: a compiled PyTorch-style step vs a hand-written
   ``jax.jit`` + ``optax`` step on the same weights (target: <= 1.05x its time).
2. Per-call overhead: a 100-parameter-tensor model with tiny shapes, compiled step vs a plain
   ``jax.jit`` over the flat pytree doing the same update (target: <= 1.2x).
3. The same MLP step in PyTorch eager, when ``torch`` is importable.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax


def _time(fn, n, warmup=3):
    for _ in range(warmup):
        jax.block_until_ready(fn())
    t = time.perf_counter()
    for _ in range(n):
        r = fn()
    jax.block_until_ready(r)
    return (time.perf_counter() - t) / n


def _mlp_funcgrad(sizes, batch, n):
    import funcgrad
    from funcgrad import nn, optim
    import funcgrad.nn.functional as F
    funcgrad.manual_seed(0)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x, y = funcgrad.randn(batch, sizes[0]), funcgrad.randint(0, sizes[-1], (batch,))

    @funcgrad.jit
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    # copies: the compiled step donates (and so deletes) the parameters' current buffers
    params = [(jnp.array(m.weight.jax()), jnp.array(m.bias.jax())) for m in model
              if isinstance(m, nn.Linear)]
    t = _time(lambda: step(x, y)._value, n)
    return t, params, x.jax(), y.jax(), step.num_traces


def _mlp_jax(params, x, y, n):
    params = jax.tree.map(jnp.array, params)
    tx = optax.adam(1e-3)
    st = tx.init(params)

    def loss_fn(p):
        h = x
        for i, (w, b) in enumerate(p):
            h = h @ w.T + b
            if i < len(p) - 1:
                h = jax.nn.relu(h)
        return optax.softmax_cross_entropy_with_integer_labels(h, y).mean()

    @jax.jit
    def step(p, s):
        loss, g = jax.value_and_grad(loss_fn)(p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, loss
    step = jax.jit(step.__wrapped__ if hasattr(step, "__wrapped__") else step, donate_argnums=(0, 1))
    box = [params, st]

    def call():
        box[0], box[1], loss = step(box[0], box[1])
        return loss
    return _time(call, n)


def _mlp_torch(sizes, batch, n):
    import torch
    torch.manual_seed(0)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, sizes[0]), torch.randint(0, sizes[-1], (batch,))

    def call():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return jnp.zeros(())
    return _time(call, n)


def _tiny(n, n_layers=50, width=4):
    import funcgrad
    from funcgrad import nn, optim
    funcgrad.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(n_layers)])
    opt = optim.SGD(model.parameters(), lr=1e-3)
    x = funcgrad.randn(2, width)

    @funcgrad.jit
    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    params = [(jnp.array(m.weight.jax()), jnp.array(m.bias.jax())) for m in model]
    t_fg = _time(lambda: step(x)._value, n)
    xa = x.jax()

    def loss_fn(p):
        h = xa
        for w, b in p:
            h = h @ w.T + b
        return (h ** 2).mean()

    def jstep(p):
        loss, g = jax.value_and_grad(loss_fn)(p)
        return jax.tree.map(lambda a, b: a - 1e-3 * b, p, g), loss
    jstep = jax.jit(jstep, donate_argnums=0)
    box = [jax.tree.map(jnp.array, params)]

    def call():
        box[0], loss = jstep(box[0])
        return loss
    t_jax = _time(call, n)
    return t_fg, t_jax


def run(n: int = 50) -> list[dict]:
    """Run the benchmarks; one dict per measurement (name, seconds, ratio...)."""
    import funcgrad
    funcgrad.set_default_dtype(funcgrad.float32)
    sizes, batch = (784, 512, 512, 10), 128
    t_fg, params, x, y, traces = _mlp_funcgrad(sizes, batch, n)
    t_jax = _mlp_jax(params, x, y, n)
    rows = [
        {"name": "jit: MLP 784-512-512-10 b128 Adam, funcgrad.jit step", "seconds": t_fg,
         "traces": traces},
        {"name": "jit: same step, hand-written jax.jit + optax", "seconds": t_jax},
        {"name": "jit: funcgrad.jit / jax.jit+optax", "ratio": t_fg / t_jax, "target": 1.05},
    ]
    try:
        import torch  # noqa: F401
        t_torch = _mlp_torch(sizes, batch, max(5, n // 2))
        rows.append({"name": "jit: same step, PyTorch eager", "seconds": t_torch})
        rows.append({"name": "jit: PyTorch eager / funcgrad.jit", "ratio": t_torch / t_fg})
    except ImportError:
        pass
    t_small, t_small_jax = _tiny(n * 4)
    rows += [
        {"name": "jit: 100-tensor tiny model step, funcgrad.jit (per call)", "seconds": t_small},
        {"name": "jit: same, plain jax.jit over the flat pytree", "seconds": t_small_jax},
        {"name": "jit: overhead ratio funcgrad.jit / jax.jit", "ratio": t_small / t_small_jax,
         "target": 1.2},
    ]
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run():
        print(r)
