"""Deep and wide graphs: backward time for 1k/10k/100k-op chains and a 10k-way fan-in.

The engine is iterative and dependency-counted, so backward time should grow linearly with the
graph: the ``note`` column gives µs per op, which should stay roughly constant across sizes.
``python -m funcgrad.bench --only hardening``.
"""

from __future__ import annotations

import gc
import time


def _chain(n: int) -> tuple[float, float]:
    """Seconds to build and to backpropagate ``y = x * 1.0`` repeated ``n`` times."""
    import funcgrad as fg
    x = fg.tensor(1.0, requires_grad=True)
    t0 = time.perf_counter()
    y = x
    for _ in range(n):
        y = y * 1.0
    t1 = time.perf_counter()
    y.backward()
    t2 = time.perf_counter()
    assert x.grad.item() == 1.0
    return t1 - t0, t2 - t1


def _fan_in(n: int) -> tuple[float, float]:
    """Seconds to build and to backpropagate a sum of ``n`` products of one leaf."""
    import funcgrad as fg
    x = fg.tensor(2.0, requires_grad=True)
    t0 = time.perf_counter()
    total = x * 0.0
    for i in range(n):
        total = total + x * float(i % 3)
    t1 = time.perf_counter()
    total.backward()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def run(sizes=(1_000, 10_000, 100_000), fan_in: int = 10_000) -> list[dict]:
    """One row per graph: backward µs (``us``), with µs/op and the forward time as a note."""
    _chain(100)  # warm the kernels: compile time is not graph time
    rows = []
    for n in sizes:
        gc.collect()
        fwd, bwd = _chain(n)
        rows.append(dict(bench="backward of an n-op chain (linear in n)", impl=f"chain {n:>7,} ops",
                         us=bwd * 1e6, note=f"{bwd / n * 1e6:.1f} µs/op backward, forward {fwd:.2f} s"))
    _fan_in(100)
    gc.collect()
    fwd, bwd = _fan_in(fan_in)
    rows.append(dict(bench=f"backward of a {fan_in:,}-way fan-in", impl="sum of products of one leaf",
                     us=bwd * 1e6, note=f"{bwd / (3 * fan_in) * 1e6:.1f} µs/op backward, "
                                        f"forward {fwd:.2f} s"))
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
