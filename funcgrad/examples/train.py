"""Train a PyTorch-style model on scikit-learn's bundled 8×8 digits, eagerly then compiled.

Run: ``python -m funcgrad.examples.train [--model mlp|cnn] [--epochs N] [--batch-size B]
[--eager | --compiled] [--seed S] [--graph PATH]``

The same ``train_step`` (zero_grad, forward, backward, clip, step) runs eagerly for the first
run and under ``funcgrad.jit`` for the second; the script prints test accuracy, steps/s of each
and the speed-up, and writes a picture of one step's backward graph. Ctrl-C stops cleanly.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import funcgrad as torch
import funcgrad.nn.functional as F
from funcgrad import nn
from funcgrad.utils.data import DataLoader, TensorDataset


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
    cut = int(0.8 * len(x))
    return (x[idx[:cut]], y[idx[:cut]]), (x[idx[cut:]], y[idx[cut:]])


def make_model(kind: str) -> nn.Module:
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1),
                             nn.Linear(128, 10))
    return nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.1), nn.Linear(32 * 2 * 2, 10))


def run(kind: str, compiled: bool, epochs: int, batch_size: int, seed: int, data, graph_path=None):
    (xtr, ytr), (xte, yte) = data
    torch.manual_seed(seed)
    model = make_model(kind)
    if kind == "cnn":
        xtr_t, xte_t = torch.tensor(xtr.reshape(-1, 64)), torch.tensor(xte.reshape(-1, 64))
    else:
        xtr_t, xte_t = torch.tensor(xtr), torch.tensor(xte)
    loader = DataLoader(TensorDataset(xtr_t, torch.tensor(ytr)), batch_size=batch_size, shuffle=True,
                        drop_last=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(loader))

    def train_step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss, (out.argmax(1) == y).float().mean()

    step = torch.jit(train_step) if compiled else train_step
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        tqdm = None
    label = "compiled" if compiled else "eager"
    n_steps, t_train, first_epoch, first_steps = 0, 0.0, 0.0, 0
    for epoch in range(epochs):
        model.train()
        it = tqdm(loader, desc=f"{label} epoch {epoch + 1}/{epochs}", leave=False, file=sys.stdout) \
            if tqdm else loader
        t0 = time.perf_counter()
        for x, y in it:
            loss, acc = step(x, y)
            sched.step()
            n_steps += 1
            if tqdm and n_steps % 10 == 0:
                it.set_postfix(loss=f"{loss.item():.3f}", acc=f"{acc.item():.2f}",
                               steps_s=f"{n_steps / max(t_train + time.perf_counter() - t0, 1e-9):.0f}")
        loss.item()  # wait for the last step before stopping the clock
        dt = time.perf_counter() - t0
        t_train += dt
        if epoch == 0:  # the first epoch includes compilation: speed is measured after it
            first_epoch, first_steps = dt, n_steps
    model.eval()
    with torch.no_grad():
        test_acc = (model(xte_t).argmax(1) == torch.tensor(yte)).float().mean().item()
    if graph_path:
        from funcgrad.viz import make_dot
        model.train()
        x, y = next(iter(loader))
        make_dot(F.cross_entropy(model(x), y), params=dict(model.named_parameters())).render(graph_path)
    steady_steps, steady_t = n_steps - first_steps, t_train - first_epoch
    speed = steady_steps / steady_t if steady_steps and steady_t > 0 else n_steps / t_train
    return dict(mode=label, test_acc=test_acc, steps=n_steps, seconds=t_train, steps_per_s=speed)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m funcgrad.examples.train", description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--eager", action="store_true", help="only the eager run")
    g.add_argument("--compiled", action="store_true", help="only the compiled run")
    p.add_argument("--graph", default="train_step_graph.svg", help="where to write the graph picture")
    a = p.parse_args(argv)
    data = load_digits(a.seed)
    print(f"digits: {len(data[0][0])} train / {len(data[1][0])} test images, model={a.model}, "
          f"epochs={a.epochs}, batch={a.batch_size}")
    results = []
    try:
        for compiled in ([False] if a.eager else [True] if a.compiled else [False, True]):
            r = run(a.model, compiled, a.epochs, a.batch_size, a.seed, data,
                    graph_path=a.graph if not compiled else None)
            results.append(r)
            print(f"{r['mode']:>8}: test accuracy {100 * r['test_acc']:.1f}%  "
                  f"({r['steps']} steps in {r['seconds']:.1f}s; {r['steps_per_s']:.0f} steps/s after "
                  f"the first epoch, which includes compilation)")
    except KeyboardInterrupt:
        print("\ninterrupted: stopping cleanly")
        return
    if len(results) == 2:
        print(f"compiled vs eager speed-up: {results[1]['steps_per_s'] / results[0]['steps_per_s']:.1f}x")
    if not a.compiled:
        print(f"graph of one step written to {a.graph}")


if __name__ == "__main__":
    main()
