"""Loops in the fused backward (autograd/fused.py, ``_loops``): where a graph repeats one block of
nodes (an RNN cell unrolled over time, a stack of equal layers), its program runs the middle
blocks as one ``lax.scan`` of one block's backward. Spec table: each row builds the same float64
graph in funcgrad and in PyTorch (the oracle) from the same numbers, and states whether its
program must hold a loop. Checked per row: the gradients against PyTorch's and against the
engine's node-by-node run (no program, no loop: meaningful without torch too), the loop's
presence, and that a second backward, and one after the program was dropped, give the same
bits."""

import numpy as np
import pytest

import funcgrad
from funcgrad.autograd import fused


def _params(lib, gen, shapes):
    return [lib.tensor(gen.standard_normal(s), dtype=lib.float64, requires_grad=True) for s in shapes]


def _set(module, gen, lib):
    with lib.no_grad():
        for p in module.parameters():
            p.copy_(lib.tensor(gen.standard_normal(tuple(p.shape)) * 0.5, dtype=lib.float64))
    return module


def _lstm_cell(lib, gen, T=30, h0_grad=False):
    cell = _set(lib.nn.LSTMCell(5, 6).double(), gen, lib)
    x, = _params(lib, gen, [(4, T, 5)])
    start = _params(lib, gen, [(4, 6), (4, 6)]) if h0_grad else [lib.zeros(4, 6, dtype=lib.float64)] * 2
    h, c = start
    for t in range(T):
        h, c = cell(x[:, t], (h, c))
    return (h * h).sum() + c.sin().sum(), [x, *cell.parameters()] + (start if h0_grad else [])


def _gru_cell(lib, gen, T=9):
    cell = _set(lib.nn.GRUCell(5, 6).double(), gen, lib)
    x, h0 = _params(lib, gen, [(4, T, 5), (4, 6)])
    h = h0
    for t in range(T):
        h = cell(x[:, t], h)
    return h.pow(2).mean(), [x, h0, *cell.parameters()]


def _tanh_rnn(lib, gen, T=12):
    x, W, U, h = _params(lib, gen, [(3, T, 4), (5, 5), (4, 5), (3, 5)])
    for t in range(T):
        h = lib.tanh(h @ W + x[:, t] @ U)
    return h.sum(), [x, W, U]


def _hand_lstm(lib, gen, T=8):  # chunk (one node, four outputs), sigmoid, tanh
    x, Wi, Wh = _params(lib, gen, [(3, T, 4), (4, 20), (5, 20)])
    h = c = lib.zeros(3, 5, dtype=lib.float64)
    for t in range(T):
        i, f, g, o = (x[:, t] @ Wi + h @ Wh).chunk(4, 1)
        c = lib.sigmoid(f) * c + lib.sigmoid(i) * lib.tanh(g)
        h = lib.sigmoid(o) * lib.tanh(c)
    return (h * c).sum(), [x, Wi, Wh]


def _time_sequence(lib, gen, T=15):  # pytorch/examples' time_sequence_prediction: every step's
    # output gathered by one cat (gradients out of the loop, one per step)
    l1 = _set(lib.nn.LSTMCell(1, 6).double(), gen, lib)
    l2 = _set(lib.nn.LSTMCell(6, 6).double(), gen, lib)
    lin = _set(lib.nn.Linear(6, 1).double(), gen, lib)
    data = lib.tensor(np.sin(np.arange(3 * T).reshape(3, T) / 5.0), dtype=lib.float64)
    h = c = h2 = c2 = lib.zeros(3, 6, dtype=lib.float64)
    outs = []
    for x_t in data.split(1, dim=1):
        h, c = l1(x_t, (h, c))
        h2, c2 = l2(h, (h2, c2))
        outs.append(lin(h2))
    out = lib.cat(outs, dim=1)
    return lib.nn.functional.mse_loss(out[:, :-1], data[:, 1:]), [*l1.parameters(), *l2.parameters(),
                                                                *lin.parameters()]


def _skip_two_back(lib, gen, T=10):  # an edge to the step before the last
    x, W = _params(lib, gen, [(3, T, 4), (4, 4)])
    hs = [lib.zeros(3, 4, dtype=lib.float64)] * 2
    for t in range(T):
        hs.append(lib.tanh(hs[-1] @ W + x[:, t]) + hs[-2])
    return hs[-1].sum(), [x, W]


def _mlp_stack(lib, gen, depth=8):  # a weight per block: each block's gradient goes to its own leaf
    layers = []
    for _ in range(depth):
        layers += [lib.nn.Linear(6, 6), lib.nn.Tanh()]
    model = _set(lib.nn.Sequential(*layers).double(), gen, lib)
    x, = _params(lib, gen, [(5, 6)])
    return model(x).pow(2).sum(), [x, *model.parameters()]


def _shrinking(lib, gen, depth=7):  # the same ops, block after block, on other shapes: no loop
    ws = _params(lib, gen, [(9 - k, 8 - k) for k in range(depth)])
    h, = _params(lib, gen, [(3, 9)])
    x = h
    for w in ws:
        h = lib.tanh(h @ w)
    return h.sum(), [x, *ws]


def _transformer(lib, gen):  # four equal encoder layers
    layer = lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    enc = _set(lib.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).double(), gen, lib)
    x, = _params(lib, gen, [(2, 5, 8)])
    return enc(x).pow(2).mean(), [x, *enc.parameters()]


# name: (graph, its program holds a loop, MAX_NODES)
CASES = {
    "lstm_cell": (_lstm_cell, True, None),
    "lstm_cell_h0_requires_grad": (lambda lib, g: _lstm_cell(lib, g, T=6, h0_grad=True), True, None),
    "lstm_cell_3_steps": (lambda lib, g: _lstm_cell(lib, g, T=3), False, None),  # (too few blocks)
    "gru_cell": (_gru_cell, True, None),
    "tanh_rnn": (_tanh_rnn, True, None),
    "hand_written_lstm": (_hand_lstm, True, None),
    "time_sequence_prediction": (_time_sequence, True, None),
    "time_sequence_prediction_in_regions": (lambda lib, g: _time_sequence(lib, g, T=30), True, 40),
    "skip_two_steps_back": (_skip_two_back, True, None),
    "mlp_stack": (_mlp_stack, True, None),
    "shrinking_widths": (_shrinking, False, None),
    "transformer_encoder": (_transformer, True, None),
}


def _grads(lib, build):
    loss, params = build(lib, np.random.default_rng(0))
    loss.backward()
    return [None if p.grad is None else p.grad.detach().numpy().copy() for p in params]


@pytest.fixture
def scans(monkeypatch):
    """The loops the programs traced while the test ran: (period, blocks) each, scanned or not."""
    seen = []
    run = fused._Loop.run

    def spy(self, *args):
        done = run(self, *args)
        seen.append((self.period, self.blocks, done))
        return done
    monkeypatch.setattr(fused._Loop, "run", spy)
    fused._SEEN.clear()
    return seen


@pytest.mark.parametrize("name", list(CASES))
def test_loop_gradients_equal_the_engines(name, scans, monkeypatch):
    build, looped, max_nodes = CASES[name]
    if max_nodes is not None:
        monkeypatch.setattr(fused, "MAX_NODES", max_nodes)
    got = _grads(funcgrad, build)
    assert any(done for _, _, done in scans) == looped, scans
    again = _grads(funcgrad, build)  # the same program, cached
    fused._SEEN.clear()
    anew = _grads(funcgrad, build)  # the program made again
    monkeypatch.setattr(fused, "MAX_NODES", 0)  # the engine, node by node
    want = _grads(funcgrad, build)
    for g, a, n, w in zip(got, again, anew, want):
        assert (g is None) == (w is None)
        if g is not None:
            assert np.array_equal(g, a) and np.array_equal(g, n)
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("name", list(CASES))
def test_loop_gradients_equal_torchs(name, scans, monkeypatch):
    torch = pytest.importorskip("torch")
    build, looped, max_nodes = CASES[name]
    if max_nodes is not None:
        monkeypatch.setattr(fused, "MAX_NODES", max_nodes)
    got, want = _grads(funcgrad, build), _grads(torch, build)
    assert any(done for _, _, done in scans) == looped, scans
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_a_loop_takes_a_weight_once():
    """A weight saved by every block is one argument of the program, not one per block."""
    fused._SEEN.clear()
    loss, params = _lstm_cell(funcgrad, np.random.default_rng(0), T=30)
    struct, args, ops, _ = fused._plan(loss.grad_fn)
    n_weights = sum(1 for a in args for p in params[1:] if a is p._cell.value)
    assert n_weights == 4  # weight_ih, weight_hh, bias_ih, bias_hh: once each
    assert len(struct[3]) > len(args)  # (entries, one per saved operand, share them)
    loops = fused._loops(struct[0], struct[3], struct[2], _offsets(struct[0]))
    # a cell and the select of x that fed it (the engine's order: the last made first), for every
    # step but the first (its zero state needs no gradient: one edge fewer)
    assert [(lp.period, lp.blocks) for lp in loops] == [(2, 29)]


def _offsets(rows):
    offs = [0]
    for row in rows:
        offs.append(offs[-1] + row[2][2])
    return offs


def test_regions_fill_to_their_bound(monkeypatch):
    """A graph over MAX_NODES runs as regions of up to MAX_NODES ops in the engine's order: a region
    takes the next ready op the engine holds too, so the steps after the first region do not
    each make a region of their own."""
    monkeypatch.setattr(fused, "MAX_NODES", 40)
    calls = []
    run = fused.run_region

    def spy(*args):
        got = run(*args)
        calls.append(got is not None)
        return got
    from funcgrad.autograd import engine
    monkeypatch.setattr(engine, "_region_run", spy)
    loss, _ = _time_sequence(funcgrad, np.random.default_rng(0), T=30)
    n = _count_ops(loss.grad_fn)
    loss.backward()
    assert n > 3 * 40 and sum(calls) <= -(-n // 40) + 1, (n, calls)


def _count_ops(root):
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node is not None and node not in seen and type(node).__name__ != "AccumulateGrad":
            seen.add(node)
            stack.extend(c for c, _ in node.next_functions)
    return len(seen)
