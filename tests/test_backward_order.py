"""The order in which a backward pass sums gradients, as PyTorch's: its engine runs, of the nodes
ready, the one made last first (``sequence_nr``; an ``AccumulateGrad`` node first of all), and a
node's gradients are summed in the order they arrive. Three or more float terms round
differently in another order, so a tensor used several times (a weight shared by the steps of a
loop, a residual, ``x`` in three branches) gets PyTorch's bits only in PyTorch's order.

Spec table: each row builds a float32 graph whose per-node gradients are exact products (so
they equal PyTorch's bit for bit, fused into one program or not) from terms of very different
magnitude, in funcgrad and in
PyTorch; the leaves' gradients must be equal bit for bit, on each of funcgrad's three paths: the
whole backward as one program, the engine node by node, and the engine's fused regions (a hook
on an intermediate)."""

import itertools

import numpy as np
import pytest

import funcgrad
from funcgrad.autograd import fused

CONSTS = [1e8, 1.0, -1e8 + 3.0, 3e-3, -7.0, 2.5e7]
# where gradients are products of gradients (not of ones), powers of two keep each product exact:
# one XLA program may compute g * c + acc as one fused multiply-add, exact only then
POW2 = [2.0 ** 27, -1.0, 2.0 ** -9, -(2.0 ** 26), 4.0]


def _branches(perm):
    def build(lib, x, hook):
        outs = [x * c for c in CONSTS[:3]]
        hook(outs[0])
        return sum(outs[i].sum() for i in perm)
    return build


def _created_in_another_order(lib, x, hook):
    b = x * CONSTS[0]
    c = x * CONSTS[2]
    a = x * CONSTS[1]
    hook(a)
    return (a + c).sum() + b.sum()


def _shared_intermediate(lib, x, hook):  # an op node (not a leaf) with four consumers
    h = x * 1.5
    hook(h)
    return (h * CONSTS[3]).sum() + (h * CONSTS[0]).sum() + (h * CONSTS[4]).sum() + (h * CONSTS[2]).sum()


def _shared_weight_loop(lib, x, hook):  # one weight in every step, as an unrolled RNN's
    w = x
    h = x * 0 + 1.0
    for c in CONSTS:
        h = h * c + w * c
    hook(h)
    return h.sum()


def _dense(lib, x, hook):  # each layer reads every earlier one (DenseNet's way)
    hs = [x]
    for c in POW2:
        hs.append(sum(h * c for h in hs))
    hook(hs[1])
    return hs[-1].sum()


def _two_losses(lib, x, hook):  # autograd.backward of two roots
    y = x * CONSTS[2]
    hook(y)
    return [(x * CONSTS[0]).sum() + y.sum(), (x * CONSTS[1]).sum()]


CASES = {**{f"branches_{''.join(map(str, p))}": _branches(p) for p in itertools.permutations(range(3))},
         "created_in_another_order": _created_in_another_order,
         "shared_intermediate": _shared_intermediate,
         "shared_weight_loop": _shared_weight_loop,
         "dense": _dense,
         "two_losses": _two_losses}
PATHS = ["whole_graph_program", "engine_node_by_node", "engine_regions"]


def _grad(lib, build, path):
    x = lib.tensor([1.0, 3.0, -2.0], dtype=lib.float32, requires_grad=True)

    def hook(t):
        if path == "engine_regions":
            t.register_hook(lambda g: g)
    out = build(lib, x, hook)
    lib.autograd.backward(out if isinstance(out, list) else [out])
    return x.grad.numpy()


@pytest.mark.torch
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", list(CASES))
def test_gradients_are_summed_in_torchs_order(name, path, monkeypatch):
    torch = pytest.importorskip("torch")
    if path == "engine_node_by_node":
        monkeypatch.setattr(fused, "MAX_NODES", 0)
    want = _grad(torch, CASES[name], path)
    got = _grad(funcgrad, CASES[name], path)
    assert got.tobytes() == want.tobytes(), (got, want)


def test_the_order_shows():
    """(The rows can fail: the branches' sums differ by order.)"""
    sums = {np.float32(np.float32(CONSTS[a]) + np.float32(CONSTS[b])) + np.float32(CONSTS[c])
            for a, b, c in itertools.permutations(range(3))}
    assert len(sums) > 1


@pytest.mark.torch
def test_sequence_numbers_order_as_torchs():
    torch = pytest.importorskip("torch")
    for lib in (torch, funcgrad):
        x = lib.ones(2, requires_grad=True)
        a, b = x * 2, x * 3
        assert a.grad_fn._sequence_nr() < b.grad_fn._sequence_nr()
        leaf = b.grad_fn.next_functions[0][0]
        assert leaf._sequence_nr() == 2 ** 64 - 1
