"""A compiled step updates its big state in place: parameters, optimizer state and the ``.grad``
that ``zero_grad()`` clears are donated, each new array written into its own old buffer, and an
array that something else still holds is never deleted under it (a copy is donated instead).

PyTorch is the oracle for the numbers (``test_compiled_step_matches_torch``); the buffer tests
check funcgrad's own promise: the same numbers as eager, with no allocation per step.
"""

import numpy as np
import pytest

import funcgrad
from funcgrad import nn, optim
from funcgrad._jit import pack as _pack

IN, HID = 80, 64  # HID*IN > pack.PACK_MAX: the first weight, its .grad and moments are not packed


def _setup(seed=0, opt_cls=optim.Adam, **kw):
    funcgrad.manual_seed(seed)
    model = nn.Sequential(nn.Linear(IN, HID), nn.ReLU(), nn.Linear(HID, 3))
    opt = opt_cls(model.parameters(), **kw)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, opt, step


def _data(seed=1):
    funcgrad.manual_seed(seed)
    return funcgrad.randn(8, IN), funcgrad.randint(0, 3, (8,))


def _big(model, opt):
    """Every big state tensor: weight, its .grad, its optimizer state."""
    w = model[0].weight
    assert w.numel() > _pack.PACK_MAX
    return [w, w.grad] + [v for v in opt.state[w].values() if v.numel() > 1]


def _ptr(t):
    return t.jax().unsafe_buffer_pointer()


@pytest.mark.parametrize("opt_cls,kw", [(optim.Adam, {"lr": 0.01}),
                                        (optim.SGD, {"lr": 0.1, "momentum": 0.9})])
def test_steady_state_reuses_every_big_buffer_and_equals_eager(opt_cls, kw):
    me, oe, se = _setup(opt_cls=opt_cls, **kw)
    mc, oc, sc = _setup(opt_cls=opt_cls, **kw)
    sc = funcgrad.jit(sc)
    x, y = _data()
    for _ in range(2):
        se(x, y), sc(x, y)
    before = {_ptr(t) for t in _big(mc, oc)}  # ints: holding them keeps no array alive
    assert len(before) == len(_big(mc, oc))
    for _ in range(2):
        np.testing.assert_allclose(sc(x, y).item(), se(x, y).item(), rtol=1e-6)
    # the outputs went into the old buffers: the gradient too, though the program never reads it
    assert {_ptr(t) for t in _big(mc, oc)} == before
    for a, b in zip(_big(me, oe), _big(mc, oc)):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-7)
    # the first call's program is the steady one (the state is made before it is traced; SGD's
    # momentum buffer starts as -0.0, whose later update gives the first one: optim/sgd.py)
    assert sc.num_traces == 1, sc.retrace_reasons


def test_held_arrays_are_not_deleted():
    me, oe, se = _setup()
    mc, oc, sc = _setup()
    sc = funcgrad.jit(sc)
    x, y = _data()
    for _ in range(2):
        se(x, y), sc(x, y)
    held = [t.jax() for t in _big(mc, oc)]  # the user keeps the arrays themselves
    old = [np.array(a) for a in held]
    se(x, y), sc(x, y)
    for a, o in zip(held, old):
        assert not a.is_deleted()
        np.testing.assert_array_equal(np.asarray(a), o)
    for a, b in zip(_big(me, oe), _big(mc, oc)):  # and the step still did the eager update
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-7)
    del held
    se(x, y), sc(x, y)  # nothing holds them now: in place again
    before = {_ptr(t) for t in _big(mc, oc)}
    se(x, y), sc(x, y)
    assert {_ptr(t) for t in _big(mc, oc)} == before


def test_two_cells_sharing_one_array_both_update():
    # ``b.data = a.data`` (a loaded state_dict does the same): one array in two cells, so
    # neither may be donated as is (the second would read a deleted buffer)
    funcgrad.manual_seed(0)
    a = funcgrad.randn(HID, IN, requires_grad=True)
    b = funcgrad.zeros(HID, IN, requires_grad=True)
    b.data = a.data
    opt = optim.SGD([a, b], lr=0.1)

    @funcgrad.jit
    def step():
        opt.zero_grad()
        ((a * a).sum() + (b * b).sum()).backward()
        opt.step()

    start = a.detach().numpy().copy()
    for _ in range(3):
        step()
    expected = start * 0.8 ** 3  # w <- w - 0.1 * 2w
    np.testing.assert_allclose(a.detach().numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(b.detach().numpy(), expected, rtol=1e-5)


@pytest.mark.torch
def test_compiled_step_matches_torch():
    torch = pytest.importorskip("torch")
    mc, oc, sc = _setup(lr=0.01)
    sc = funcgrad.jit(sc)
    x, y = _data()
    tm = torch.nn.Sequential(torch.nn.Linear(IN, HID), torch.nn.ReLU(), torch.nn.Linear(HID, 3))
    with torch.no_grad():
        for p, q in zip(tm.parameters(), mc.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy().copy()))
    to = torch.optim.Adam(tm.parameters(), lr=0.01)
    tx, ty = torch.from_numpy(x.numpy().copy()), torch.from_numpy(y.numpy().copy())
    for _ in range(4):
        loss = sc(x, y)
        to.zero_grad()
        tl = torch.nn.functional.cross_entropy(tm(tx), ty)
        tl.backward()
        to.step()
        np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-5)
    for p, q in zip(tm.parameters(), mc.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-6)
