"""A recurrent stack (``nn.RNN``/``nn.LSTM``/``nn.GRU``, one op whose kernel scans the sequence)
never joins a fused backward program (``Op.fuse``): the engine runs it as its own kernel, cached
per sequence length, and the ops around it run as region programs. Found running
pytorch/tutorials' char-RNN name classification as a user would: a batch is 64 names of random
lengths, each through the RNN, their losses summed; one program for the whole backward compiled
anew every step (its shapes are each step's mix of lengths), 12 s a step, 13x PyTorch's time.

Spec table: per recurrent module, three such batches in funcgrad and in PyTorch (the oracle).
The later batches mix the same lengths in other orders: they compile nothing, the stack's node
runs by itself once per sample, and the gradients are PyTorch's.
"""

import numpy as np
import pytest

import funcgrad
from funcgrad import _dispatch

from .test_caches import _COMPILES

MODULES = {"RNN": "StackBackward0", "LSTM": "MkldnnRnnLayerBackward0", "GRU": "StackBackward0"}
LENGTHS = [[2, 5, 3, 4, 2, 3], [4, 3, 2, 5, 5, 2], [3, 3, 4, 2, 5, 4]]  # the same lengths, mixed


def _model(lib, kind):
    rng = np.random.default_rng(0)
    rnn = getattr(lib.nn, kind)(5, 8)
    head = lib.nn.Linear(8, 3)
    with lib.no_grad():
        for p in list(rnn.parameters()) + list(head.parameters()):
            p.copy_(lib.tensor(rng.normal(scale=0.4, size=tuple(p.shape)).astype(np.float32)))
    return rnn, head


def _batch(lib, rnn, head, lengths, seed):
    rng = np.random.default_rng(seed)
    loss = 0
    for n in lengths:  # as the tutorial: each sample through the stack, the losses summed
        x = lib.tensor(rng.normal(size=(n, 1, 5)).astype(np.float32))
        _, h = rnn(x)
        if isinstance(h, tuple):
            h = h[0]
        out = lib.nn.functional.log_softmax(head(h[0]), dim=1)
        loss = loss + lib.nn.functional.nll_loss(out, lib.tensor([int(rng.integers(3))]))
    loss.backward()
    return [p.grad.numpy().copy() for p in list(rnn.parameters()) + list(head.parameters())]


@pytest.mark.parametrize("kind", MODULES)
def test_lengths_in_another_order_compile_nothing(kind, monkeypatch):
    runs = []
    real = _dispatch.OpNode._apply

    def counted(self, grads, key=None):
        runs.append(self.name())
        return real(self, grads, key)
    monkeypatch.setattr(_dispatch.OpNode, "_apply", counted)
    rnn, head = _model(funcgrad, kind)
    for _ in range(4):  # every length's kernels, the regions' programs (and the zeros kernel
        with _COMPILES as c:  # the initial states take once their host-made copies are used up)
            _batch(funcgrad, rnn, head, LENGTHS[0], 0)
        if c.n == 0:
            break
    assert c.n == 0, "the same batch again still compiles"
    for i, lengths in enumerate(LENGTHS[1:], 1):
        rnn.zero_grad()
        head.zero_grad()
        runs.clear()
        with _COMPILES as c:
            _batch(funcgrad, rnn, head, lengths, i)
        assert c.n == 0, f"{c.n} new XLA programs for lengths {lengths} in another order"
        # the stack's node by itself, once per sample; everything else in region programs
        assert runs == [MODULES[kind]] * len(lengths), runs


@pytest.mark.torch
@pytest.mark.parametrize("kind", MODULES)
def test_gradients_match_torch(kind):
    torch = pytest.importorskip("torch")
    mods = {lib: _model(lib, kind) for lib in (funcgrad, torch)}
    for i, lengths in enumerate(LENGTHS):
        got = {}
        for lib, (rnn, head) in mods.items():
            rnn.zero_grad()
            head.zero_grad()
            got[lib] = _batch(lib, rnn, head, lengths, i)
        for f, t in zip(got[funcgrad], got[torch], strict=True):
            np.testing.assert_allclose(f, t, rtol=1e-5, atol=1e-6)


def test_the_same_bits_every_time():
    grads = []
    for _ in range(2):
        rnn, head = _model(funcgrad, "LSTM")
        grads.append([g.tobytes() for i, lengths in enumerate(LENGTHS) for g in _batch(funcgrad, rnn, head,
                                                                                     lengths, i)])
    assert grads[0] == grads[1]
