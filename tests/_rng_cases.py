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
    # sizes 26..40 cross randperm's switch from the short loop to the vectorised swaps
    "randperm_x10": lambda m, n: _np(m.randperm(10 * n, dtype=m.int32)),
    # half types (bfloat16 widened to float32, exactly, so .npy can hold it)
    "rand_f16": lambda m, n: _np(m.rand(n, dtype=m.float16)),
    "rand_bf16": lambda m, n: _np(m.rand(n, dtype=m.bfloat16).float()),
    "randn_f16": lambda m, n: _np(m.randn(n, dtype=m.float16)),
    "randn_bf16": lambda m, n: _np(m.randn(n, dtype=m.bfloat16).float()),
    "uniform_f16": lambda m, n: _np(m.empty(n, dtype=m.float16).uniform_(0.3, 0.7)),
    "uniform_bf16": lambda m, n: _np(m.empty(n, dtype=m.bfloat16).uniform_(-3.3, 1.7).float()),
    "normal_f16": lambda m, n: _np(m.empty(n, dtype=m.float16).normal_(0.5, 2.0)),
    "dropout_f16": lambda m, n: _np(m.nn.functional.dropout(m.full((n,), 3.0, dtype=m.float16), 0.3)),
    "exponential_f16": lambda m, n: _np(m.empty(n, dtype=m.float16).exponential_(1.5)),
    "bernoulli_bf16": lambda m, n: _np(m.bernoulli(m.rand(n).to(m.bfloat16)).float()),
    # complex: ATen fills view_as_real(t) (2n parts; normal with std / sqrt(2)), so n = 8 crosses
    # normal's switch from the scalar path to the blocks of 16
    "randn_c64": lambda m, n: _np(m.view_as_real(m.randn(n, dtype=m.complex64))),
    "randn_c128": lambda m, n: _np(m.view_as_real(m.randn(n, dtype=m.complex128))),
    "rand_c64": lambda m, n: _np(m.view_as_real(m.rand(n, dtype=m.cfloat))),
    "rand_c128": lambda m, n: _np(m.view_as_real(m.rand(n, dtype=m.cdouble))),
    "uniform_c64": lambda m, n: _np(m.view_as_real(m.empty(n, dtype=m.complex64).uniform_(-2.5, 3.0))),
    "normal_c64": lambda m, n: _np(m.view_as_real(m.empty(n, dtype=m.complex64).normal_(0.5, 2.0))),
    "normal_c128": lambda m, n: _np(m.view_as_real(m.empty(n, dtype=m.complex128).normal_(-1.0, 0.3))),
    "randn_like_c64": lambda m, n: _np(m.view_as_real(m.randn_like(m.zeros(n, 2, dtype=m.complex64)))),
    "randn_gen_c64": lambda m, n: _np(m.view_as_real(
        m.randn(n, dtype=m.cfloat, generator=m.Generator().manual_seed(n + 7)))),
    "normal_t_c128": lambda m, n: _np(m.view_as_real(
        m.normal(m.full((n,), 1 - 2j, dtype=m.complex128), m.full((n,), 3.0, dtype=m.float64)))),
}

# values per size where a case does not return ``n`` of them
COUNT = {"multinomial": lambda n: min(n, 3), "multinomial_repl": lambda n: 14,
         "randn_then_scalar": lambda n: n + 3, "randperm_x10": lambda n: 10 * n,
         **{k: (lambda n: 2 * n) for k in ("randn_c64", "randn_c128", "rand_c64", "rand_c128", "uniform_c64",
                                           "normal_c64", "normal_c128", "randn_gen_c64", "normal_t_c128")},
         "randn_like_c64": lambda n: 4 * n}


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


def _flat(arrays) -> np.ndarray:
    return np.concatenate([np.asarray(a, np.float32).ravel() for a in arrays])


def rnn_dropout(m, mode: str, compiled: bool = False, batch_first: bool = False,
                bidirectional: bool = False, packed: bool = False, p: float = 0.5) -> np.ndarray:
    """A 3-layer ``mode`` (LSTM/GRU/RNN) with inter-layer dropout in train mode, two steps of a
    weighted-sum loss: outputs and parameter gradients, flat. Both steps draw new masks."""
    m.manual_seed(0)
    net = getattr(m.nn, mode)(3, 4, num_layers=3, dropout=p, batch_first=batch_first,
                              bidirectional=bidirectional)
    x = m.randn(5, 2, 3)

    def step(x):
        if packed:
            o = net(m.nn.utils.rnn.pack_padded_sequence(x, [5, 3], batch_first=batch_first))[0].data
        else:
            o = net(x)[0]
        (o * (m.arange(o.numel(), dtype=o.dtype).reshape(o.shape) / 10)).sum().backward()
        return o.detach()

    f = m.jit(step) if compiled else step
    out = []
    for _ in range(2):
        net.zero_grad()
        out.append(_np(f(x)))
        out += [_np(q.grad) for q in net.parameters()]
    return _flat(out)


def attention_dropout(m, kind: str, compiled: bool = False) -> np.ndarray:
    """Attention-weight dropout in train mode, two steps: outputs and gradients, flat.
    ``kind``: ``mha`` (need_weights=True, bmm path), ``mha_noweights`` (PyTorch's sdpa path),
    ``sdpa`` (with a broadcast batch and is_causal), ``encoder_bf`` (a batch-first
    TransformerEncoderLayer: its dropout1 sees MultiheadAttention's transposed output)."""
    m.manual_seed(0)
    if kind.startswith("mha"):
        net = m.nn.MultiheadAttention(8, 2, dropout=0.3)
    elif kind == "encoder_bf":
        net = m.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, batch_first=True)
    else:
        net = m.nn.Linear(8, 8)
    x = m.randn(4, 3, 8, requires_grad=True)
    k2 = m.randn(2, 5, 8)

    def step(x):
        if kind == "sdpa":
            q = net(x).reshape(2, 3, 2, 8).transpose(1, 2)  # (2, 2, 3, 8) against keys (2, 1, 5, 8)
            a = m.nn.functional.scaled_dot_product_attention(q, k2[:, None], k2[:, None], dropout_p=0.4)
            a = a + m.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.4, is_causal=True)
        elif kind == "encoder_bf":
            a = net(x)
        else:
            a, w = net(x, x, x, need_weights=kind == "mha")
            if w is not None:
                a = a + w.sum()
        (a * m.arange(a.numel(), dtype=a.dtype).reshape(a.shape)).sum().backward()
        return a.detach()

    f = m.jit(step) if compiled else step
    out = []
    for _ in range(2):
        net.zero_grad()
        x.grad = None
        out += [_np(f(x)), _np(x.grad)]
        out += [_np(q.grad) for q in net.parameters()]
    return _flat(out)


RNN_DROPOUT = {"lstm": dict(mode="LSTM"), "gru": dict(mode="GRU"), "rnn": dict(mode="RNN"),
               "lstm_bf_p03": dict(mode="LSTM", batch_first=True, p=0.3),
               "gru_bidir": dict(mode="GRU", bidirectional=True),
               "lstm_packed": dict(mode="LSTM", packed=True)}
ATTENTION_DROPOUT = ("mha", "mha_noweights", "sdpa", "encoder_bf")
