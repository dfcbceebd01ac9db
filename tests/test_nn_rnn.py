"""Recurrent layers: outputs and gradients vs an LSTM/GRU unrolled in jax.numpy, parameter layout,
shapes (batch_first, unbatched, bidirectional), packed sequences; optional PyTorch comparison."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad import nn
from funcgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

X = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)


def _lstm_ref(params, x):
    wi, wh, bi, bh = params
    h = c = jnp.zeros((x.shape[1], wh.shape[1]))
    outs = []
    for t in range(x.shape[0]):
        i, f, g, o = jnp.split(x[t] @ wi.T + bi + h @ wh.T + bh, 4, -1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        outs.append(h)
    return jnp.stack(outs), h, c


def test_lstm_matches_unrolled_jnp():
    m = nn.LSTM(3, 4)
    names = [n for n, _ in m.named_parameters()]
    assert names == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert m.weight_ih_l0.shape == (16, 3)
    ps = [np.asarray(p._value) for p in m.parameters()]
    assert all(np.abs(p).max() <= 0.5 for p in ps)  # U(-1/sqrt(4), 1/sqrt(4))
    x = funcgrad.tensor(X, requires_grad=True)
    out, (h, c) = m(x)
    ro, rh, rc = _lstm_ref(ps, X)
    np.testing.assert_allclose(np.asarray(out._value), ro, atol=1e-5)
    np.testing.assert_allclose(np.asarray(c._value)[0], rc, atol=1e-5)
    (out.sum() + (h * h).sum()).backward()

    def loss(params, x):
        o, h, _ = _lstm_ref(params, x)
        return o.sum() + (h * h).sum()
    gp, gx = jax.grad(loss, argnums=(0, 1))(ps, X)
    np.testing.assert_allclose(np.asarray(x.grad._value), gx, atol=1e-5)
    for p, g in zip(m.parameters(), gp):
        np.testing.assert_allclose(np.asarray(p.grad._value), g, atol=1e-5)


def test_gru_gate_order():
    m = nn.GRUCell(3, 2)
    wi, wh, bi, bh = [np.asarray(p._value) for p in m.parameters()]
    x, h = X[0], np.ones((2, 2), np.float32)
    a, b = x @ wi.T + bi, h @ wh.T + bh
    r = jax.nn.sigmoid(a[:, :2] + b[:, :2])
    z = jax.nn.sigmoid(a[:, 2:4] + b[:, 2:4])
    n = jnp.tanh(a[:, 4:] + r * b[:, 4:])
    want = (1 - z) * n + z * h
    np.testing.assert_allclose(np.asarray(m(funcgrad.tensor(x), funcgrad.tensor(h))._value), want, atol=1e-6)


def test_shapes_and_errors():
    g = nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    out, h = g(funcgrad.tensor(X))  # (N=5, L=2, 3)
    assert out.shape == (5, 2, 8) and h.shape == (4, 5, 4)
    out, h = nn.RNN(3, 4)(funcgrad.tensor(X[:, 0]))
    assert out.shape == (5, 4) and h.shape == (1, 4)
    assert "weight_hh_l1_reverse" in dict(g.named_parameters())
    assert repr(g) == "GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True)"
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 4, got 3"):
        nn.LSTM(4, 2)(funcgrad.tensor(X))
    out7, _ = g(funcgrad.randn(5, 7, 3))  # another length: the graph is dynamic
    assert out7.shape == (5, 7, 8)


def test_pad_and_pack_roundtrip():
    seqs = [funcgrad.ones(3, 2), funcgrad.ones(1, 2) * 2, funcgrad.ones(2, 2) * 3]
    padded = pad_sequence(seqs, batch_first=True)
    assert padded.shape == (3, 3, 2) and padded[1, 1, 0].item() == 0.0
    pk = pack_padded_sequence(padded, [3, 1, 2], batch_first=True, enforce_sorted=False)
    assert pk.batch_sizes.tolist() == [3, 2, 1]
    back, lens = pad_packed_sequence(pk, batch_first=True)
    assert lens.tolist() == [3, 1, 2]
    np.testing.assert_array_equal(np.asarray(back._value), np.asarray(padded._value))
    out, (h, c) = nn.LSTM(2, 3)(pk)
    assert isinstance(out, type(pk)) and h.shape == (1, 3, 3)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        pack_padded_sequence(padded, [3, 1, 2], batch_first=True)


@pytest.mark.filterwarnings("ignore:LSTM with projections:UserWarning")
def test_against_torch():
    torch = pytest.importorskip("torch")
    for tc, fc, kw in [(torch.nn.LSTM, nn.LSTM, dict(num_layers=2, bidirectional=True, proj_size=2))]:
        tm, fm = tc(3, 4, **kw), fc(3, 4, **kw)
        for n, p in tm.named_parameters():
            getattr(fm, n)._set_value(funcgrad.tensor(p.detach().numpy())._value)
        tx = torch.tensor(X)
        fx = funcgrad.tensor(X)
        to, fo = tm(tx)[0], fm(fx)[0]
        to.sum().backward()
        fo.sum().backward()
        for n, p in tm.named_parameters():
            np.testing.assert_allclose(p.grad.numpy(), np.asarray(getattr(fm, n).grad._value), atol=1e-5)
