"""A model applied to samples of other sizes one by one, their losses summed before one
``backward`` (pytorch/tutorials' char-RNN name classification: a batch is 64 names of random
lengths, each through ``nn.RNN``). One fused program over the whole backward has each batch's
mix of lengths as its shapes, so it compiled anew every step: 12-15 s a step, 13x PyTorch's time
for that tutorial. Now

* a recurrent stack (one op whose kernel scans the sequence) never joins a fused program
  (``Op.fuse``): the engine runs it as its own kernel, cached per length;
* where a parameter is used by several nodes of one op whose saved inputs differ in shape (a
  convolution over sequences of other lengths), a region starts at each of them
  (``fused._cut_varying``), so each region's program depends on one sample's length.

Spec table: per model, batches of the same lengths in other orders, in funcgrad and in PyTorch
(the oracle), by the whole-graph path, by regions (a graph larger than ``MAX_NODES``) and with a
hook on a node (regions from the start). Once each length has been seen in each place, a batch
compiles nothing; the gradients are PyTorch's, the same bits every time.
"""

import numpy as np
import pytest

import funcgrad
from funcgrad.autograd import fused

from .test_caches import _COMPILES


def _recurrent(kind):
    def build(lib):
        rnn, head = getattr(lib.nn, kind)(5, 8), lib.nn.Linear(8, 3)

        def forward(x):  # x: (length, 1, 5)
            _, h = rnn(x)
            return head((h[0] if isinstance(h, tuple) else h)[0])
        return [rnn, head], forward, lambda n: (n, 1, 5)
    return build


def _conv(lib):
    conv, head = lib.nn.Conv1d(5, 6, 3, padding=1), lib.nn.Linear(6, 3)

    def forward(x):  # x: (1, 5, length)
        return head(lib.relu(conv(x)).mean(-1))
    return [conv, head], forward, lambda n: (1, 5, n)


# name -> (builder, the node the engine runs by itself once per sample, or None)
CASES = {"RNN": (_recurrent("RNN"), "StackBackward0"), "LSTM": (_recurrent("LSTM"), "MkldnnRnnLayerBackward0"),
         "GRU": (_recurrent("GRU"), "StackBackward0"), "Conv1d": (_conv, None)}
PATHS = ["whole_graph", "regions", "hooked"]
LENGTHS = [2, 3, 4, 5, 2, 4]


def _batches(n=10):
    rng = np.random.default_rng(7)
    return [[int(v) for v in rng.permutation(LENGTHS)] for _ in range(n)]


def _model(lib, build):
    mods, forward, shape = build(lib)
    rng = np.random.default_rng(0)
    with lib.no_grad():
        for m in mods:
            for p in m.parameters():
                p.copy_(lib.tensor(rng.normal(scale=0.4, size=tuple(p.shape)).astype(np.float32)))
    return mods, forward, shape


def _batch(lib, model, lengths, seed, path):
    mods, forward, shape = model
    for m in mods:
        m.zero_grad()
    rng = np.random.default_rng(seed)
    loss = 0
    for i, n in enumerate(lengths):  # as the tutorial: each sample through the model, losses summed
        out = forward(lib.tensor(rng.normal(size=shape(n)).astype(np.float32)))
        if path == "hooked" and i == 1:
            out.register_hook(lambda g: g)
        loss = loss + lib.nn.functional.cross_entropy(out, lib.tensor([int(rng.integers(3))]))
    loss.backward()
    return [p.grad.numpy().copy() for m in mods for p in m.parameters()]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", CASES)
def test_lengths_in_other_orders_compile_nothing(name, path, monkeypatch, node_runs):
    """The batches once, then again with their middle samples in reverse order (the first, the
    hooked second and the last sample in their places): the second time nothing compiles. Before,
    each reordered batch was a new program."""
    if path == "regions":
        monkeypatch.setattr(fused, "MAX_NODES", 40)  # (a window of 5 samples)
    build, alone = CASES[name]
    model = _model(funcgrad, build)
    batches = _batches()
    for i, lengths in enumerate(batches):
        _batch(funcgrad, model, lengths, i, path)
    reordered = [b[:2] + b[2:-1][::-1] + b[-1:] for b in batches]
    assert sum(r != b for r, b in zip(reordered, batches, strict=True)) >= 6
    for i, lengths in enumerate(reordered):
        node_runs.clear()
        with _COMPILES as c:
            _batch(funcgrad, model, lengths, i, path)
        assert c.n == 0, f"{c.n} new XLA programs for the lengths {lengths}"
        if alone is not None:  # the stack's node by itself, once per sample
            assert node_runs.count(alone) == len(lengths), node_runs


@pytest.mark.torch
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", CASES)
def test_gradients_match_torch(name, path, monkeypatch):
    torch = pytest.importorskip("torch")
    if path == "regions":
        monkeypatch.setattr(fused, "MAX_NODES", 40)  # (a window of 5 samples)
    build, _ = CASES[name]
    models = {lib: _model(lib, build) for lib in (funcgrad, torch)}
    for i, lengths in enumerate(_batches(3)):
        got = {lib: _batch(lib, model, lengths, i, path) for lib, model in models.items()}
        for f, t in zip(got[funcgrad], got[torch], strict=True):
            np.testing.assert_allclose(f, t, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", CASES)
def test_the_same_bits_every_time(name):
    build, _ = CASES[name]
    grads = []
    for _ in range(2):
        model = _model(funcgrad, build)
        grads.append([g.tobytes() for i, lengths in enumerate(_batches(3))
                      for g in _batch(funcgrad, model, lengths, i, "whole_graph")])
    assert grads[0] == grads[1]
