"""The GPU check's smoke run (``.ci/gpu/check.sh``): the default device, an MLP moved to cuda
(eager and compiled: run-to-run bits, per-step time) beside PyTorch's CUDA and CPU steps, and a
tiny eager backward on each."""

import time

import numpy as np

import funcgrad as fg

print("default device", fg.get_default_device(), "| new tensor on", fg.randn(2).device,
      "| .to('cuda') on", fg.randn(2).to("cuda").device)


def mlp_run(lib, dev, steps=20, compiled=False):
    """Per-step times (a ``.item()`` sync each) and the first layer's weights after ``steps``."""
    lib.manual_seed(0)
    nn = lib.nn
    m = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    m = m.to(dev) if dev else m
    opt = lib.optim.Adam(m.parameters(), lr=1e-3)
    rs = np.random.RandomState(0)
    x, y = lib.tensor(rs.randn(64, 784).astype("float32")), lib.tensor(rs.randint(0, 10, 64))
    x, y = (x.to(dev), y.to(dev)) if dev else (x, y)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    step = fg.jit(step) if compiled else step
    ts = []
    for _ in range(steps):
        t = time.perf_counter()
        loss = step(x, y).item()
        ts.append(time.perf_counter() - t)
    return loss, m[0].weight.detach().cpu().numpy().copy(), ts


for compiled in (False, True):
    l1, w1, ts = mlp_run(fg, "cuda", compiled=compiled)
    _, w2, _ = mlp_run(fg, "cuda", compiled=compiled)
    print(f"funcgrad cuda {'compiled' if compiled else 'eager'}: loss {l1:.6f}, first step "
          f"{ts[0] * 1e3:.0f} ms, median later {np.median(ts[5:]) * 1e6:.0f} us, "
          f"run-to-run bitwise equal: {np.array_equal(w1, w2)}")


def tiny(lib, dev):
    a, b = lib.randn(4, 4), lib.randn(4, 4)
    a, b = (a.to(dev), b.to(dev)) if dev else (a, b)
    a.requires_grad_(), b.requires_grad_()
    for _ in range(50):
        (a * b).sum().backward()
    t = time.perf_counter()
    for _ in range(500):
        (a * b).sum().backward()
    float(a.grad.sum())
    return (time.perf_counter() - t) / 500 * 1e6


print(f"tiny (a*b).sum().backward(): funcgrad cuda {tiny(fg, 'cuda'):.1f} us, cpu {tiny(fg, None):.1f} us")
try:
    import torch
except ImportError:
    torch = None
if torch is not None and torch.cuda.is_available():
    lt, _, tt = mlp_run(torch, "cuda")
    print(f"pytorch {torch.__version__} cuda eager: loss {lt:.6f}, median {np.median(tt[5:]) * 1e6:.0f} us")
    lc, wc, tc = mlp_run(torch, None)
    print(f"pytorch cpu eager: loss {lc:.6f}, median {np.median(tc[5:]) * 1e6:.0f} us")
    print(f"tiny: torch cuda {tiny(torch, 'cuda'):.1f} us, cpu {tiny(torch, None):.1f} us")
