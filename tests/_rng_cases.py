"""The random-number cases shared by tests/test_random.py and tests/fixtures/rng/make_fixtures.py.

Each case is ``fn(m, n)`` with ``m`` either ``funcgrad`` or ``torch``: the same calls, so the
values can be compared bit for bit.
"""

from __future__ import annotations

import numpy as np


def _np(t):
    return t.detach().numpy()


CASES = {
    "rand_f32": lambda m, n: _np(m.rand(n)),
    "rand_f64": lambda m, n: _np(m.rand(n, dtype=m.float64)),
    "randn_f32": lambda m, n: _np(m.randn(n)),
    "randn_f64": lambda m, n: _np(m.randn(n, dtype=m.float64)),
    "uniform_f32": lambda m, n: _np(m.empty(n).uniform_(-2.5, 3.0)),
    "normal_f32": lambda m, n: _np(m.empty(n).normal_(0.5, 2.0)),
    "normal_f64": lambda m, n: _np(m.empty(n, dtype=m.float64).normal_(-1.0, 0.3)),
    "randint": lambda m, n: _np(m.randint(-5, 17, (n,))),
    "randint_wide": lambda m, n: _np(m.randint(0, 2 ** 40, (n,))),
    "random_int64": lambda m, n: _np(m.empty(n, dtype=m.int64).random_()),
    "randperm": lambda m, n: _np(m.randperm(n)),
    "bernoulli_p": lambda m, n: _np(m.empty(n).bernoulli_(0.3)),
    "bernoulli_t": lambda m, n: _np(m.bernoulli(m.rand(n))),
    "dropout": lambda m, n: _np(m.nn.functional.dropout(m.ones(n), 0.1)),
    "exponential": lambda m, n: _np(m.empty(n, dtype=m.float64).exponential_(1.5)),
    "multinomial": lambda m, n: _np(m.multinomial(m.rand(n) + 0.01, min(n, 3))),
    "multinomial_repl": lambda m, n: _np(m.multinomial(m.rand(2, n) + 0.01, 7, replacement=True)),
    "randn_then_scalar": lambda m, n: np.concatenate([_np(m.randn(n)), _np(m.randn(3))]),
}

# values per size where a case does not return ``n`` of them
COUNT = {"multinomial": lambda n: min(n, 3), "multinomial_repl": lambda n: 14,
         "randn_then_scalar": lambda n: n + 3}


def linear_weights(m):
    m.manual_seed(0)
    lin = m.nn.Linear(784, 256)
    return np.concatenate([_np(lin.weight).ravel(), _np(lin.bias)])


def mlp_losses(m, compiled: bool, steps: int = 20) -> list:
    m.manual_seed(0)
    net = m.nn.Sequential(m.nn.Linear(20, 64), m.nn.ReLU(), m.nn.Dropout(0.3), m.nn.Linear(64, 5))
    opt = m.optim.SGD(net.parameters(), lr=0.1)
    x, y = m.randn(32, 20), m.randint(0, 5, (32,))

    def step(x, y):
        opt.zero_grad()
        loss = m.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    if compiled:
        step = m.jit(step)
    return [float(step(x, y)) for _ in range(steps)]


def dataloader_order(m, num_workers: int = 0) -> list:
    m.manual_seed(0)
    data = m.utils.data
    kw = {"num_workers": num_workers} if num_workers else {}
    loader = data.DataLoader(data.TensorDataset(m.arange(50)), batch_size=8, shuffle=True, **kw)
    return [i for _ in range(3) for (b,) in loader for i in b.tolist()]
