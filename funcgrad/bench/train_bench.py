"""Eager (not compiled) MLP train step: funcgrad vs PyTorch eager, side by side.

MLP 784-256-256-10, batch 64, Adam: ``zero_grad(); cross_entropy(model(x), y).backward();
step()``, written identically in both. Issue 4's target is funcgrad eager <= 1.0x PyTorch eager
*as a user gets it*: PyTorch with its default number of intra-op threads (the first row, the
base of the ratios). PyTorch with one thread is shown too: funcgrad runs its kernels on one
core, but JAX dispatches asynchronously, so a second core overlaps Python dispatch with XLA's
execution; one-thread PyTorch is the per-core comparison. On a busy machine PyTorch's thread
pool may spin and its default-threads time jump by orders of magnitude: that row is then
noise, read the one-thread row. Timings are interleaved best-of-N, the thread count set
before each PyTorch call (it is process-global).
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
    import funcgrad.nn.functional as F
    from funcgrad import nn, optim
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


_torch_default_threads: list[int] = []  # PyTorch's own default, read before anyone changes it


def torch_threads_default() -> int:
    """PyTorch's default intra-op thread count on this machine."""
    import torch
    if not _torch_default_threads:
        _torch_default_threads.append(torch.get_num_threads())
    return _torch_default_threads[0]


def torch_step(sizes=(784, 256, 256, 10), batch=64, threads: int | None = 1):
    """The same step in PyTorch eager (``torch`` must be importable), run with ``threads``
    intra-op threads (None: PyTorch's default), set at each call since the setting is global.

    One thread is the default here: on a busy small machine PyTorch's thread pool spins and can
    be 20x slower or worse (funcgrad's tiny eager kernels run single-threaded too).
    """
    import torch
    n = torch_threads_default() if threads is None else threads
    torch.manual_seed(0)
    model = torch.nn.Sequential(*_sizes_layers(torch.nn, sizes))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, sizes[0]), torch.randint(0, sizes[-1], (batch,))

    def step():
        torch.set_num_threads(n)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return None
    return step


def run(n: int = 30) -> list[dict]:
    """One row per implementation (``bench``, ``impl``, ``us``, ``note``); the first row (PyTorch
    with its default threads, when PyTorch is installed) is the base of the ratios."""
    import funcgrad
    prev = funcgrad.get_default_dtype()
    funcgrad.set_default_dtype(funcgrad.float32)
    try:
        fns, impls = [], []
        try:
            default = torch_threads_default()
            fns += [torch_step(threads=None), torch_step(threads=1)]
            impls += [f"pytorch eager ({default} threads)", "pytorch eager (1 thread)"]
            notes = ["PyTorch's default: the target", ""]
        except ImportError:
            notes = []
        fns.append(funcgrad_step())
        impls.append("funcgrad eager")
        notes.append("")
        bench = ("train: eager MLP 784-256-256-10 b64 Adam step "
                 "(target funcgrad <= 1.0x PyTorch with its default threads)")
        return [dict(bench=bench, impl=i, us=t * 1e6, note=note)
                for i, t, note in zip(impls, _time_many(fns, n), notes)]
    finally:
        funcgrad.set_default_dtype(prev)


if __name__ == "__main__":  # pragma: no cover
    from .__main__ import _print
    _print(run())
