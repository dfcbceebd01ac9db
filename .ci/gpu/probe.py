"""The GPU check's probe (``.ci/gpu/check.sh``): a ``funcgrad.jit`` MLP 784-256-256-10 B=64 Adam
step beside a hand-written ``jax.jit`` + optax one on the device named by argv[1] (the second
also with 5 Python float arguments, to price a host-to-device copy there), whether a compiled
step copies anything implicitly (``jax.transfer_guard``), and a profile of its Python side."""

import cProfile
import io
import pstats
import sys
import time

import jax
import jax.numpy as jnp
import optax

import funcgrad
from funcgrad import nn, optim

funcgrad.set_default_device(sys.argv[1] if len(sys.argv) > 1 else "cuda")  # (JAX's default too)


def timeit(f, n=300):
    jax.block_until_ready([f() for _ in range(20)])
    best = 1e9
    for _ in range(3):
        t = time.perf_counter()
        r = [f() for _ in range(n)]
        jax.block_until_ready(r)
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


funcgrad.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
opt = optim.Adam(model.parameters(), lr=1e-3)
x, y = funcgrad.randn(64, 784), funcgrad.randint(0, 10, (64,))


@funcgrad.jit
def step(x, y):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


print(f"funcgrad.jit {timeit(lambda: step(x, y)._value):.1f} us (params on {model[0].weight.device})")
params = [(jnp.array(m.weight.jax()), jnp.array(m.bias.jax())) for m in model if isinstance(m, nn.Linear)]


def loss_fn(ps, x, y):
    for i, (w, b) in enumerate(ps):
        x = x @ w.T + b
        x = jax.nn.relu(x) if i < len(ps) - 1 else x
    return optax.softmax_cross_entropy_with_integer_labels(x, y).mean()


tx = optax.adam(1e-3)


@jax.jit
def jstep(ps, st, x, y, *floats):
    loss, g = jax.value_and_grad(loss_fn)(ps, x, y)
    u, st = tx.update(g, st, ps)
    return optax.apply_updates(ps, u), st, loss + 0 * sum(floats)


S = {"p": params, "s": tx.init(params)}


def jax_step(*floats):
    S["p"], S["s"], loss = jstep(S["p"], S["s"], x.jax(), y.jax(), *floats)
    return loss


print(f"jax.jit + optax {timeit(jax_step):.1f} us; with 5 Python float arguments "
      f"{timeit(lambda: jax_step(1e-3, 0.9, 0.999, 1e-8, 0.0)):.1f} us")
for kind in ("host_to_device", "device_to_host", "device_to_device"):
    try:
        with getattr(jax, f"transfer_guard_{kind}")("disallow"):
            step(x, y)
        print(f"no implicit {kind} transfer in a compiled step")
    except Exception as e:  # noqa: BLE001 - the finding is the message
        print(f"{kind} transfer in a compiled step: {type(e).__name__}: {str(e)[:300]}")
prof = cProfile.Profile()
prof.enable()
jax.block_until_ready([step(x, y)._value for _ in range(300)])
prof.disable()
out = io.StringIO()
pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
print(out.getvalue()[:4000])
