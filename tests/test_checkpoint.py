"""funcgrad.utils.checkpoint against torch.utils.checkpoint: gradients, warnings, recompute."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad
from funcgrad.utils.checkpoint import checkpoint

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

R = np.random.default_rng(0)
W1, B1, W2, B2 = R.normal(size=(5, 4)), R.normal(size=5), R.normal(size=(3, 5)), R.normal(size=3)
X = R.normal(size=(2, 4))


def _model(lib):
    m = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 3), lib.nn.Sigmoid())
    m.load_state_dict({"0.weight": lib.tensor(W1, dtype=lib.float32), "0.bias": lib.tensor(B1, dtype=lib.float32),
                       "2.weight": lib.tensor(W2, dtype=lib.float32), "2.bias": lib.tensor(B2, dtype=lib.float32)})
    return m


def _run(lib, how, reentrant):
    ck = funcgrad.utils.checkpoint if lib is funcgrad else torch.utils.checkpoint
    m = _model(lib)
    x = lib.tensor(X, dtype=lib.float32, requires_grad=True)
    if how == "checkpoint":
        y = ck.checkpoint(lambda a: m(a) * 2, x, use_reentrant=reentrant)
    else:
        y = ck.checkpoint_sequential(m, 2, x, use_reentrant=reentrant)
    (y ** 2).sum().backward()
    return [y.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("how", ["checkpoint", "sequential"])
def test_gradients_match_torch(how, reentrant):
    for a, b in zip(_run(funcgrad, how, reentrant), _run(torch, how, reentrant)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_node_name_and_recompute():
    calls = []

    def f(a):
        calls.append(funcgrad.is_grad_enabled())
        return a.exp()

    x = funcgrad.tensor([0.0, 1.0], requires_grad=True)
    y = checkpoint(f, x, use_reentrant=True)
    assert y.grad_fn.name() == "CheckpointFunctionBackward" and calls == [False]
    y.sum().backward()
    assert calls == [False, True]  # recomputed with grad mode on in backward
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)


@pytest.mark.parametrize("name", ["checkpoint", "checkpoint_sequential"])
def test_warning_without_use_reentrant_matches_torch(name):
    msgs = []
    for lib in (funcgrad, torch):
        ck = funcgrad.utils.checkpoint if lib is funcgrad else torch.utils.checkpoint
        x = lib.ones(1, 2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            if name == "checkpoint":
                ck.checkpoint(lambda a: a * 2, x)
            else:
                ck.checkpoint_sequential(lib.nn.Sequential(lib.nn.Identity(), lib.nn.Identity()), 2, x)
        msgs.append([(type(i.message), str(i.message)) for i in w if "use_reentrant" in str(i.message)])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1


def test_dropout_mask_is_replayed():
    d = funcgrad.nn.Dropout(0.5)
    x = funcgrad.ones(1000, requires_grad=True)
    y = checkpoint(d, x, use_reentrant=True)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())  # same mask: grad = 2·mask


def test_inside_jit_matches_eager():
    m = _model(funcgrad)
    opt = funcgrad.optim.SGD(m.parameters(), lr=0.1)
    x = funcgrad.tensor(X, dtype=funcgrad.float32)

    def step():
        opt.zero_grad()
        h = m[0](x)  # requires grad: the recompute node is recorded and traced
        loss = checkpoint(lambda a: m[3](m[2](m[1](a))), h, use_reentrant=True).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    lc = funcgrad.jit(step)()
    pc = [p.detach().numpy().copy() for p in m.parameters()]
    m2 = _model(funcgrad)
    opt2 = funcgrad.optim.SGD(m2.parameters(), lr=0.1)
    opt2.zero_grad()
    le = m2(x).pow(2).sum()
    le.backward()
    opt2.step()
    np.testing.assert_allclose(lc.item(), le.item(), rtol=1e-6)
    for a, p in zip(pc, m2.parameters()):
        np.testing.assert_allclose(a, p.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_inside_jit_the_recompute_is_fenced_and_dropout_repeats():
    """In a compiled step the recompute passes through an optimization barrier (as jax.checkpoint's
    prevent_cse: XLA cannot fold it back into the forward), and with dropout inside the segment
    the compiled step equals the eager one (the forward's RNG state is restored for the recompute)."""
    def make():
        funcgrad.manual_seed(3)
        blk = funcgrad.nn.Sequential(funcgrad.nn.Linear(8, 8), funcgrad.nn.Dropout(0.5), funcgrad.nn.Tanh())
        return blk, funcgrad.optim.SGD(blk.parameters(), lr=0.1)

    def stepper(blk, opt):
        def step(x):
            opt.zero_grad()
            loss = checkpoint(blk, x, use_reentrant=True).pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        return step

    x = funcgrad.ones(4, 8, requires_grad=True)
    (be, oe), (bc, oc) = make(), make()
    eager, compiled = stepper(be, oe), funcgrad.jit(stepper(bc, oc))
    assert "optimization_barrier" in compiled.lower(x).as_text()
    funcgrad.manual_seed(7)
    le = [float(eager(x)) for _ in range(3)]
    funcgrad.manual_seed(7)
    lc = [float(compiled(x)) for _ in range(3)]
    np.testing.assert_allclose(lc, le, rtol=1e-6)
    for p, q in zip(be.parameters(), bc.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-7)
