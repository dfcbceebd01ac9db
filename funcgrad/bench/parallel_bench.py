"""Data-parallel compiled step time on 1, 2, 4, 8 simulated CPU devices (``funcgrad.parallel``).

Runs in a subprocess with ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (the flag must
precede jax's backend start). On a 2-core CPU the time is flat or worse with more devices —
the point is that the same step runs SPMD; on a real multi-GPU/TPU host run ``_child`` there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

_CHILD = r'''
import json, time
import numpy as np
import funcgrad as fg
from funcgrad import nn, parallel as par
rows = []
X = np.random.RandomState(0).randn(256, 64).astype(np.float32)
Y = np.random.RandomState(1).randn(256, 8).astype(np.float32)
import jax
for n in (1, 2, 4, 8):
    if n > jax.device_count():
        break
    fg.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8))
    opt = fg.optim.Adam(model.parameters(), lr=1e-3)
    mesh = par.make_mesh(data=n, devices=jax.devices()[:n])
    par.shard_module(model, mesh)
    x, y = par.shard_batch((fg.tensor(X), fg.tensor(Y)), mesh)
    @fg.jit
    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    for _ in range(5):
        step(x, y)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(20):
            l = step(x, y)
        l._value.block_until_ready()
        best = min(best, (time.perf_counter() - t) / 20)
    rows.append(dict(bench="data-parallel Adam step, MLP 64-256-8, global batch 256",
                     impl=f"{n} device(s)", us=best * 1e6,
                     note=f"{jax.default_backend()}, mesh data={n}"))
print("RESULT " + json.dumps(rows))
'''


def run() -> list[dict]:
    """Step time per device count (rows: bench, impl, us, note)."""
    env = dict(os.environ)
    if "xla_force_host_platform_device_count" not in env.get("XLA_FLAGS", ""):
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True,
                       timeout=600)
    if p.returncode:
        raise RuntimeError(f"parallel bench failed:\n{p.stderr[-2000:]}")
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


if __name__ == "__main__":
    for r in run():
        print(r)
