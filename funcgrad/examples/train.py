"""Train a PyTorch-style model on scikit-learn's bundled 8×8 digits, eagerly then compiled.

Run: ``python -m funcgrad.examples.train [--model mlp|cnn] [--epochs N] [--batch-size B]
[--steps N] [--eager | --compiled] [--no-pytorch] [--seed S] [--graph PATH]``

The same ``train_step`` (zero_grad, forward, backward, clip, step) runs eagerly, then under
``funcgrad.jit``, then (when PyTorch is installed) in PyTorch itself as a baseline, on the same
model, data and number of steps. Each row prints test accuracy, the total time (warm-up and
compilation included) and the steady-state rate (steps after the first ``WARMUP`` steps, which
trace and compile); the speed-up is given both ways. ``--graph PATH`` writes a picture of one
step's backward graph (.svg/.dot anywhere; .png/.pdf need Graphviz). Ctrl-C exits with status 130.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

import numpy as np

import funcgrad
import funcgrad.viz

# The first steps trace and compile (funcgrad.jit compiles on the first call and traces once more
# on the second, to check the step reads no `.grad` the first left) or warm caches up: the
# steady-state rate is measured after them.
WARMUP = 3
TRAIN_FRACTION = 0.8
PICTURE_FORMATS = (".svg", ".dot", ".png", ".pdf")


def load_digits(seed: int):
    """The 1 797 digits images (bundled with scikit-learn: no download), split 80/20."""
    try:
        from sklearn.datasets import load_digits as _load
    except ImportError:  # pragma: no cover - the examples extra installs it
        sys.exit("this example needs scikit-learn: pip install 'funcgrad[examples]'")
    d = _load()
    x = (d.images / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    idx = np.random.default_rng(seed).permutation(len(x))
    cut = int(TRAIN_FRACTION * len(x))
    return (x[idx[:cut]], y[idx[:cut]]), (x[idx[cut:]], y[idx[cut:]])


def make_model(kind: str, lib=funcgrad):
    """The ``mlp`` or ``cnn`` model, built with ``lib`` (``funcgrad`` or ``torch``: the same code)."""
    nn = lib.nn
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1),
                             nn.Linear(128, 10))
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.1), nn.Linear(32 * 2 * 2, 10))


def _progress(loader, desc):
    # a bar only on a terminal: piped or captured output gets the result lines alone
    if not sys.stdout.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - the examples extra installs it
        return None
    return tqdm(total=len(loader), desc=desc, leave=False, file=sys.stdout)


def run(lib, mode: str, kind: str, epochs: int, batch_size: int, seed: int, data, max_steps=None):
    """Train with ``lib`` (``funcgrad`` or ``torch``); ``mode`` is eager, compiled or PyTorch."""
    nn, F = lib.nn, lib.nn.functional
    from_data = importlib.import_module(lib.__name__ + ".utils.data")
    (xtr, ytr), (xte, yte) = data
    lib.manual_seed(seed)
    model = make_model(kind, lib)
    xtr_t, xte_t = lib.tensor(xtr.reshape(len(xtr), -1)), lib.tensor(xte.reshape(len(xte), -1))
    loader = from_data.DataLoader(from_data.TensorDataset(xtr_t, lib.tensor(ytr)),
                                  batch_size=batch_size, shuffle=True, drop_last=True)
    total = epochs * len(loader) if max_steps is None else min(max_steps, epochs * len(loader))
    opt = lib.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)

    def train_step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss, (out.argmax(1) == y).float().mean()

    step = funcgrad.jit(train_step) if mode == "compiled" else train_step
    n_steps, t_warm = 0, None
    model.train()
    t0 = time.perf_counter()
    for epoch in range(epochs):
        bar = _progress(loader, f"{mode} epoch {epoch + 1}/{epochs}")
        for x, y in loader:
            loss, acc = step(x, y)
            sched.step()
            n_steps += 1
            if n_steps == WARMUP:
                loss.item()  # wait for the warm-up steps before starting the steady-state clock
                t_warm = time.perf_counter()
            if bar is not None:
                bar.update()
                if n_steps % 10 == 0 and t_warm is not None and n_steps > WARMUP:
                    # the same steady-state rate as the final report
                    rate = (n_steps - WARMUP) / max(time.perf_counter() - t_warm, 1e-9)
                    bar.set_postfix(loss=f"{loss.item():.3f}", acc=f"{acc.item():.2f}",
                                    steady_steps_s=f"{rate:.0f}")
            if n_steps == total:
                break
        if bar is not None:
            bar.close()
        if n_steps == total:
            break
    loss.item()  # wait for the last step before stopping the clock
    t_end = time.perf_counter()
    steady = (n_steps - WARMUP) / (t_end - t_warm) if t_warm is not None and n_steps > WARMUP else None
    model.eval()
    with lib.no_grad():
        test_acc = (model(xte_t).argmax(1) == lib.tensor(yte)).float().mean().item()
    return dict(mode=mode, model=model, loader=loader, test_acc=test_acc, steps=n_steps,
                seconds=t_end - t0, warmup_seconds=(t_warm or t_end) - t0, steps_per_s=steady)


def _positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m funcgrad.examples.train", description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--epochs", type=_positive, default=15)
    p.add_argument("--batch-size", type=_positive, default=64)
    p.add_argument("--steps", type=_positive, default=None,
                   help="stop each run after this many steps (default: all the epochs' steps)")
    p.add_argument("--seed", type=int, default=0)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--eager", action="store_true", help="only the eager run")
    g.add_argument("--compiled", action="store_true", help="only the compiled run")
    p.add_argument("--no-pytorch", action="store_true", help="skip the PyTorch baseline row")
    p.add_argument("--graph", default=None, metavar="PATH",
                   help="write a picture of one step's backward graph (.svg, .dot; .png/.pdf need Graphviz)")
    return p


def _check_args(p, a, n_train: int) -> None:
    """Refuse bad arguments before any training starts."""
    if a.batch_size > n_train:
        p.error(f"--batch-size {a.batch_size} is larger than the {n_train} training images "
                f"(every batch is full: drop_last=True)")
    if a.graph is not None:
        ext = os.path.splitext(a.graph)[1].lower()
        if ext not in PICTURE_FORMATS:
            p.error(f"--graph {a.graph!r}: unknown picture format {ext or '(none)'!r}; use one of "
                    f"{', '.join(PICTURE_FORMATS)}")
        if ext in (".png", ".pdf") and not funcgrad.viz.has_dot():
            p.error(f"--graph {a.graph!r}: {ext} needs Graphviz's 'dot' program (apt-get install "
                    f"graphviz); .svg and .dot work without it")
        folder = os.path.dirname(os.path.abspath(a.graph))
        if not os.path.isdir(folder):
            p.error(f"--graph {a.graph!r}: no such directory {folder!r}")


def _row(r) -> str:
    rate = f"{r['steps_per_s']:.0f} steps/s steady state" if r["steps_per_s"] else \
        f"steady-state rate n/a (needs more than {WARMUP} steps)"
    return (f"{r['mode']:>8}: test accuracy {100 * r['test_acc']:.1f}%  {r['steps']} steps in "
            f"{r['seconds']:.2f} s total (the first {WARMUP} steps, which trace/compile/warm up: "
            f"{r['warmup_seconds']:.2f} s); {rate}")


def main(argv=None) -> None:
    """The command line; Ctrl-C anywhere exits with status 130 and a one-line message."""
    try:
        _main(argv)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        sys.exit(130)  # what Python itself exits with on Ctrl-C (128 + SIGINT)


def _main(argv) -> None:
    p = _parser()
    a = p.parse_args(argv)
    data = load_digits(a.seed)
    _check_args(p, a, len(data[0][0]))
    libs = []
    if not a.compiled:
        libs.append((funcgrad, "eager"))
    if not a.eager:
        libs.append((funcgrad, "compiled"))
    if not a.no_pytorch:
        try:
            libs.append((importlib.import_module("torch"), "PyTorch"))
        except ImportError:
            pass
    steps_per_epoch = len(data[0][0]) // a.batch_size
    print(f"digits: {len(data[0][0])} train / {len(data[1][0])} test images, model={a.model}, "
          f"epochs={a.epochs}, batch={a.batch_size} ({steps_per_epoch} steps/epoch)", flush=True)
    results = {}
    for lib, mode in libs:
        r = run(lib, mode, a.model, a.epochs, a.batch_size, a.seed, data, max_steps=a.steps)
        results[mode] = r
        print(_row(r), flush=True)
    if "eager" in results and "compiled" in results:
        e, c = results["eager"], results["compiled"]
        steady = f"{c['steps_per_s'] / e['steps_per_s']:.1f}x steady state, " \
            if e["steps_per_s"] and c["steps_per_s"] else ""
        print(f"compiled vs eager: {steady}{e['seconds'] / c['seconds']:.1f}x in total time "
              f"(compilation included)")
    if a.graph:
        _write_graph(results[libs[0][1]], a.graph)
        print(f"graph of one step written to {a.graph}")


def _write_graph(r, path: str) -> None:
    # one eager forward of the trained model: the graph a step's backward() walks
    model = r["model"]
    model.train()
    x, y = next(iter(r["loader"]))
    loss = funcgrad.nn.functional.cross_entropy(model(x), y)
    funcgrad.viz.make_dot(loss, params=dict(model.named_parameters())).render(path)


if __name__ == "__main__":
    main()
