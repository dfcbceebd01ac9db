"""The jit bridge's packed small state (funcgrad/_jit/pack.py): many small parameters, their
``.grad`` and optimizer state travel as one buffer per dtype, and every Python object still
looks exactly as after an eager step."""

import copy

import jax
import numpy as np
import pytest

import funcgrad
from funcgrad import nn, optim
from funcgrad._jit import pack as _pack
from funcgrad._tensor import _PackedCell


def _model(seed=0, width=3, n=6):
    funcgrad.manual_seed(seed)
    return nn.Sequential(*[nn.Linear(width, width) for _ in range(n)]).double()


def _step_fn(model, opt):
    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


def _pair(opt_cls=optim.Adam, **kw):
    """An eager and a compiled copy of the same model and optimizer."""
    me, mc = _model(), _model()
    oe, oc = opt_cls(me.parameters(), **kw), opt_cls(mc.parameters(), **kw)
    return me, oe, _step_fn(me, oe), mc, oc, funcgrad.jit(_step_fn(mc, oc))


def _np(t):
    return np.asarray(t.jax())


def _same(me, mc, oe=None, oc=None):
    for (n, a), b in zip(me.named_parameters(), mc.parameters()):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-10, atol=1e-12, err_msg=n)
        np.testing.assert_allclose(_np(b.grad), _np(a.grad), rtol=1e-10, atol=1e-12, err_msg=n)
    if oe is not None:
        for pa, pb in zip(me.parameters(), mc.parameters()):
            for k, v in oe.state[pa].items():
                np.testing.assert_allclose(np.asarray(oc.state[pb][k]), np.asarray(v), rtol=1e-10,
                                           atol=1e-12, err_msg=k)


def _packed(t):
    return type(t._cell) is _PackedCell


def test_small_state_is_packed_and_equals_eager():
    me, oe, se, mc, oc, sc = _pair(lr=0.01)
    x = funcgrad.randn(4, 3, dtype=funcgrad.float64)
    for _ in range(4):
        np.testing.assert_allclose(sc(x).item(), se(x).item(), rtol=1e-10)
    p = mc[0].weight
    assert _packed(p) and _packed(p.grad) and _packed(oc.state[p]["exp_avg"])
    _same(me, mc, oe, oc)


def test_eager_write_between_calls_is_seen():
    me, oe, se, mc, oc, sc = _pair(optim.SGD, lr=0.1, momentum=0.9)
    x = funcgrad.randn(4, 3, dtype=funcgrad.float64)
    for _ in range(3):
        se(x), sc(x)
    with funcgrad.no_grad():  # one piece written eagerly: the pack gathers it next call
        me[2].bias.add_(1.0)
        mc[2].bias.add_(1.0)
    assert not _packed(mc[2].bias) and _packed(mc[1].bias)
    for _ in range(3):
        np.testing.assert_allclose(sc(x).item(), se(x).item(), rtol=1e-10)
    _same(me, mc, oe, oc)
    assert _packed(mc[2].bias)


def test_views_and_detached_aliases_follow_the_new_values():
    me, oe, se, mc, oc, sc = _pair(lr=0.05)
    x = funcgrad.randn(4, 3, dtype=funcgrad.float64)
    se(x), sc(x), se(x), sc(x)
    row, alias = mc[0].weight[1], mc[0].weight.detach()
    _np(row)  # cache the view's value
    for _ in range(2):
        se(x), sc(x)
    np.testing.assert_allclose(_np(row), _np(me[0].weight[1]), rtol=1e-10)
    np.testing.assert_allclose(_np(alias), _np(me[0].weight), rtol=1e-10)
    with funcgrad.no_grad():  # a write through the view reaches the parameter and the step
        row.mul_(0.5)
        me[0].weight[1].mul_(0.5)
    np.testing.assert_allclose(sc(x).item(), se(x).item(), rtol=1e-10)
    _same(me, mc, oe, oc)


def test_arrays_read_earlier_stay_valid():
    _, _, _, mc, _, sc = _pair(lr=0.05)
    x = funcgrad.randn(4, 3, dtype=funcgrad.float64)
    sc(x), sc(x)
    a, b = mc[0].bias.jax(), _np(mc[0].bias).copy()
    g = mc[0].bias.grad.jax()
    sc(x), sc(x)  # the packed buffers are donated: the pieces read above are their own arrays
    np.testing.assert_array_equal(np.asarray(a), b)
    assert not a.is_deleted() and not g.is_deleted()
    assert not np.array_equal(_np(mc[0].bias), b)


def test_two_steps_sharing_parameters():
    """A second compiled step writing the same small tensors takes them over and back."""
    me, oe, se, mc, oc, sc = _pair(optim.SGD, lr=0.1)

    def shrink(model):
        with funcgrad.no_grad():
            for m in model:
                m.bias.mul_(0.9)
    shrink_c = funcgrad.jit(lambda: shrink(mc))
    x = funcgrad.randn(4, 3, dtype=funcgrad.float64)
    for _ in range(4):
        np.testing.assert_allclose(sc(x).item(), se(x).item(), rtol=1e-10)
        shrink_c(), shrink(me)
    _same(me, mc)


def test_eager_training_continues_after_compiled_steps():
    me, oe, se, mc, oc, sc = _pair(lr=0.02)
    x = funcgrad.randn(4, 3, dtype=funcgrad.float64)
    for _ in range(3):
        se(x), sc(x)
    step_eager_on_c = _step_fn(mc, oc)
    for _ in range(3):
        np.testing.assert_allclose(step_eager_on_c(x).item(), se(x).item(), rtol=1e-10)
    _same(me, mc, oe, oc)
    np.testing.assert_allclose(sc(x).item(), se(x).item(), rtol=1e-10)  # and compiled again
    _same(me, mc, oe, oc)


def test_state_dict_deepcopy_and_save_load(tmp_path):
    _, _, _, mc, oc, sc = _pair(lr=0.02)
    x = funcgrad.randn(4, 3, dtype=funcgrad.float64)
    sc(x), sc(x), sc(x)
    sd = mc.state_dict()
    clone = copy.deepcopy(mc)
    funcgrad.save({"model": sd, "opt": oc.state_dict()}, tmp_path / "ck.fg")
    back = funcgrad.load(tmp_path / "ck.fg")
    sc(x)  # the saved values are not the live buffers
    for k, v in back["model"].items():
        np.testing.assert_array_equal(_np(v), _np(clone.state_dict()[k]))
        assert not np.array_equal(_np(v), _np(mc.state_dict()[k]))


def test_pack_plan_limits():
    """Only small, same-dtype, single-device arrays are packed, in groups of two or more."""
    avals = [jax.core.ShapedArray((3,), np.float32), jax.core.ShapedArray((_pack.PACK_MAX + 1,), np.float32),
             jax.core.ShapedArray((2, 2), np.float32), jax.core.ShapedArray((4,), np.int32),
             jax.core.ShapedArray((5,), np.float64)]
    cells = list(range(len(avals)))
    assert _pack.plan(cells, avals, lambda c: None) == [([0, 2], False)]


def test_retrace_after_structure_change_repacks():
    _, _, _, mc, oc, sc = _pair(lr=0.02)
    x = funcgrad.randn(4, 3, dtype=funcgrad.float64)
    sc(x), sc(x)
    n = sc.num_traces
    sc(funcgrad.randn(5, 3, dtype=funcgrad.float64))  # new input shape: a new program and packs
    assert sc.num_traces == n + 1
    before = [_np(p).copy() for p in mc.parameters()]
    sc(x)
    assert sc.num_traces == n + 1
    assert all(not np.array_equal(a, _np(p)) for a, p in zip(before, mc.parameters()))


@pytest.mark.parametrize("dtype", [funcgrad.float32, funcgrad.float64])
def test_mixed_sizes_and_dtypes(dtype):
    funcgrad.manual_seed(1)
    big = nn.Linear(80, 80).to(dtype)  # 6400 weights: not packed; its bias is
    small = nn.Linear(80, 2).to(dtype)
    opt = optim.Adam(list(big.parameters()) + list(small.parameters()), lr=1e-2)

    @funcgrad.jit
    def step(x):
        opt.zero_grad()
        loss = small(big(x).relu()).sum()
        loss.backward()
        opt.step()
        return loss
    x = funcgrad.randn(3, 80, dtype=dtype)
    losses = [step(x).item() for _ in range(4)]
    assert not _packed(big.weight) and _packed(big.bias) and _packed(small.weight)
    assert losses[-1] < losses[0]
