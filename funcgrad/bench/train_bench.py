"""Eager (not compiled) MLP train step: funcgrad vs PyTorch eager, side by side.

MLP 784-256-256-10, batch 64, Adam (issue 4's target: funcgrad eager <= 1.0x PyTorch eager):
``zero_grad(); cross_entropy(model(x), y).backward(); step()``, written identically in both.
Timings are interleaved best-of-N (the machine may be busy).
"""

from __future__ import annotations

import time

import jax


def _time_many(fns, n: int, repeat: int = 7, warmup: int = 3) -> list[float]:
    """Best-of-``repeat`` seconds per call of each fn, the fns timed in interleaved rounds
    (interleaving spreads a busy machine's noise over all of them alike)."""
    for f in fns:
        for _ in range(warmup):
            jax.block_until_ready(f())
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            for _ in range(n):
                r = f()
            jax.block_until_ready(r)
            best[i] = min(best[i], (time.perf_counter() - t) / n)
    return best


def _sizes_layers(nn, sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return layers[:-1]


def funcgrad_step(sizes=(784, 256, 256, 10), batch=64):
    """A ready-to-call eager funcgrad train step (returns the loss array)."""
    import funcgrad
    from funcgrad import nn, optim
    import funcgrad.nn.functional as F
    funcgrad.manual_seed(0)
    model = nn.Sequential(*_sizes_layers(nn, sizes))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    x, y = funcgrad.randn(batch, sizes[0]), funcgrad.randint(0, sizes[-1], (batch,))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss._value
    return step


def torch_step(sizes=(784, 256, 256, 10), batch=64):
    """The same step in PyTorch eager (``torch`` must be importable)."""
    import torch
    # one intra-op thread: on a busy small machine torch's thread pool spins and is ~20x slower
    # (funcgrad's tiny eager kernels run single-threaded too)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*_sizes_layers(torch.nn, sizes))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, sizes[0]), torch.randint(0, sizes[-1], (batch,))

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return None
    return step


def run(n: int = 30) -> list[dict]:
    """One row per implementation (``bench``, ``impl``, ``us``)."""
    import funcgrad
    prev = funcgrad.get_default_dtype()
    funcgrad.set_default_dtype(funcgrad.float32)
    try:
        fns, impls = [], []
        try:
            fns.append(torch_step())
            impls.append("pytorch eager")
        except ImportError:
            pass
        fns.append(funcgrad_step())
        impls.append("funcgrad eager")
        bench = "train: eager MLP 784-256-256-10 b64 Adam step (target funcgrad <= 1.0x PyTorch)"
        return [dict(bench=bench, impl=i, us=t * 1e6) for i, t in zip(impls, _time_many(fns, n))]
    finally:
        funcgrad.set_default_dtype(prev)


if __name__ == "__main__":  # pragma: no cover
    from .__main__ import _print
    _print(run())
