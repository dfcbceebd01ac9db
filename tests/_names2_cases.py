"""Cases recorded from PyTorch for tests/test_names2_fixtures.py (each ``case(lib)`` gives a NumPy
array, for ``lib`` funcgrad or torch): the draws and trajectories of the names added by the
second names probe (LazyLinear init, gumbel_softmax, DistributedSampler, spectral_norm's u/v,
the new distributions' samples, Rprop/ASGD, CyclicLR)."""

from __future__ import annotations

import numpy as np


def lazy_linear(lib):
    lib.manual_seed(3)
    m = lib.nn.LazyLinear(5)
    m(lib.ones(2, 7))
    return np.concatenate([m.weight.detach().numpy().ravel(), m.bias.detach().numpy()])


def gumbel(lib):
    lib.manual_seed(7)
    x = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    soft = lib.nn.functional.gumbel_softmax(x, tau=0.5)
    hard = lib.nn.functional.gumbel_softmax(x, hard=True, dim=0)
    return np.concatenate([soft.numpy().ravel(), hard.numpy().ravel()])


def distributed_sampler(lib):
    mod = __import__(lib.__name__ + ".utils.data.distributed", fromlist=["DistributedSampler"])
    out = []
    for kw in (dict(num_replicas=3, rank=1, seed=4), dict(num_replicas=4, rank=3, drop_last=True)):
        s = mod.DistributedSampler(range(23), **kw)
        for epoch in (0, 5):
            s.set_epoch(epoch)
            out.extend(list(s))
    return np.array(out, np.int64)


def spectral_uv(lib):
    lib.manual_seed(4)
    m = lib.nn.utils.spectral_norm(lib.nn.Linear(5, 3))
    return np.concatenate([m.weight_u.numpy(), m.weight_v.numpy()])


def samples(lib):
    D = lib.distributions
    lib.manual_seed(11)
    ds = [D.Exponential(lib.tensor([0.5, 2.0])), D.Laplace(lib.tensor([0.0, 1.0]), lib.tensor([1.0, 0.5])),
          D.Cauchy(lib.tensor([0.0, 1.0]), lib.tensor([1.0, 0.5])), D.Geometric(lib.tensor([0.3, 0.8])),
          D.LogNormal(lib.tensor([0.0, 1.0]), lib.tensor([1.0, 0.5]))]
    return np.concatenate([d.sample((3,)).numpy().ravel() for d in ds])


def _trajectory(lib, name, kw):
    p = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
    opt = getattr(lib.optim, name)([p], **kw)
    for t in range(20):
        opt.zero_grad()
        # a mildly time-varying loss (curvature stays small: float32 rounding is not amplified)
        ((p - 0.3) ** 2 * lib.tensor([1.0, 3.0, 0.5]) + (p * (0.05 * t)).sin()).sum().backward()
        opt.step()
    return p.detach().numpy()


def rprop(lib):
    return _trajectory(lib, "Rprop", dict(lr=0.05))


def asgd(lib):
    return _trajectory(lib, "ASGD", dict(lr=0.05, t0=5, lambd=1e-2))


def cyclic(lib):
    opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    s = lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=3, mode="triangular2")
    out = []
    for _ in range(15):
        opt.step()
        s.step()
        out += [s.get_last_lr()[0], opt.param_groups[0]["momentum"]]
    return np.array(out)


CASES = {f.__name__: f for f in (lazy_linear, gumbel, distributed_sampler, spectral_uv, samples, rprop, asgd,
                                 cyclic)}
