"""Optimizer steps donate the old parameter and state buffers to XLA (an in-place update) only
when nothing else can see them: every other holder of the old values keeps valid, unchanged
values, tensors sharing storage see the new ones, and results equal the non-donating path."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funcgrad
from funcgrad import optim


def _no_donation(opt):
    opt._donation = lambda params, *a: tuple((False, False) for _ in params)
    return opt


def _quad_step(opt, params):
    opt.zero_grad()
    sum(((p * p).sum() for p in params), funcgrad.tensor(0.0)).backward()
    opt.step()


def _pointers(p, opt):
    return {p._value.unsafe_buffer_pointer()} | {
        v._value.unsafe_buffer_pointer() for v in opt.state[p].values()
        if isinstance(v, funcgrad.Tensor) and v.ndim}


def test_steady_state_updates_in_place():
    funcgrad.manual_seed(0)
    w = funcgrad.randn(64, 32, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    _quad_step(opt, [w])
    before = _pointers(w, opt)  # ints: holding them keeps no array alive
    expected = w.detach().numpy().copy()
    _quad_step(opt, [w])
    assert _pointers(w, opt) == before  # XLA wrote the new values into the old buffers
    assert not np.array_equal(w.detach().numpy(), expected)


def test_held_jax_array_is_not_donated():
    w = funcgrad.ones(5, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    _quad_step(opt, [w])
    a = w.jax()
    m = opt.state[w]["exp_avg"].jax()
    a0, m0 = np.array(a), np.array(m)
    _quad_step(opt, [w])
    assert not a.is_deleted() and not m.is_deleted()
    np.testing.assert_array_equal(np.asarray(a), a0)
    np.testing.assert_array_equal(np.asarray(m), m0)
    assert not np.array_equal(w.detach().numpy(), a0)


def test_held_numpy_view_stays_valid():
    w = funcgrad.ones(5, requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    _quad_step(opt, [w])
    n = w.detach().numpy()
    n0 = n.copy()
    _quad_step(opt, [w])
    # the array shares the parameter's memory, as PyTorch's: it follows the update (a donated
    # buffer would have left it stale or garbage)
    assert not np.array_equal(n, n0)
    np.testing.assert_array_equal(n, np.asarray(w.detach()))


def test_pjrt_copies_a_buffer_with_an_external_reference():
    # the refcount guard never donates an array behind a NumPy view; this checks the layer
    # below that too: PJRT keeps such a buffer (no deletion, no warning) instead of reusing it
    f = jax.jit(lambda a: a + 1, donate_argnums=0)
    x = jnp.zeros(8)
    n = np.asarray(x)
    y = f(x)
    assert not x.is_deleted()
    np.testing.assert_array_equal(n, np.zeros(8))
    np.testing.assert_array_equal(np.asarray(y), np.ones(8))
    z = jnp.zeros(8)
    f(z)
    assert z.is_deleted()  # without the view, the buffer is donated


def test_shared_storage_sees_new_values():
    w = funcgrad.arange(6.0).reshape(2, 3).requires_grad_()
    opt = optim.Adam([w], lr=0.5)
    _quad_step(opt, [w])
    d = w.detach()
    with funcgrad.no_grad():
        row = w[1]
        t = w.t()
    _quad_step(opt, [w])
    now = w.detach().numpy()
    np.testing.assert_array_equal(d.numpy(), now)
    np.testing.assert_array_equal(row.numpy(), now[1])
    np.testing.assert_array_equal(t.numpy(), now.T)


def test_saved_graph_reports_inplace_modification():
    w = funcgrad.ones(3, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    _quad_step(opt, [w])
    loss = (w * w).sum()  # saves w's array for backward
    (w * 2.0).sum().backward()
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_view_parameter_falls_back_and_writes_through():
    base = funcgrad.arange(6.0).reshape(2, 3)
    p = base.t().requires_grad_()
    assert p._viewinfo is not None
    opt = optim.Adam([p], lr=0.5)
    for _ in range(2):
        _quad_step(opt, [p])
    np.testing.assert_array_equal(base.numpy(), p.detach().numpy().T)


def test_duplicate_parameter_and_shared_array():
    w = funcgrad.ones(4, requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        opt = optim.Adam([w, w], lr=0.1)
    for _ in range(2):
        _quad_step(opt, [w])
    assert np.isfinite(w.detach().numpy()).all()
    a = funcgrad.ones(4, requires_grad=True)
    b = funcgrad.zeros(4, requires_grad=True)
    b.data = a.data  # two cells, one array
    opt = optim.Adam([a, b], lr=0.1)
    for _ in range(2):
        _quad_step(opt, [a, b])
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


OPTIMIZERS = [
    ("SGD", {}), ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("AdamW", {}), ("Adamax", {}), ("NAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("RAdam", {}), ("RMSprop", {"momentum": 0.5, "centered": True}), ("Adagrad", {"lr_decay": 0.1}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=[f"{n}{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_same_numbers_as_without_donation_and_no_warning(name, kw, dtype):
    dt = getattr(funcgrad, dtype)
    results = []
    for donate in (True, False):
        funcgrad.manual_seed(0)
        ps = [funcgrad.randn(5, 3, dtype=dt, requires_grad=True),
              funcgrad.randn(3, dtype=dt, requires_grad=True)]
        opt = getattr(optim, name)(ps, lr=0.05, **kw)
        if not donate:
            _no_donation(opt)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "Some donated buffers were not usable" would fail
            for _ in range(3):
                _quad_step(opt, ps)
        results.append([p.detach().numpy() for p in ps]
                       + [v.numpy() for p in ps for v in opt.state[p].values()
                          if isinstance(v, funcgrad.Tensor)])
        for p in ps:
            for v in [p, *opt.state[p].values()]:
                if isinstance(v, funcgrad.Tensor):
                    assert v._value.dtype == dt.np or v.ndim == 0
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_state_dict_roundtrip_keeps_both_optimizers_valid():
    funcgrad.manual_seed(0)
    w = funcgrad.randn(4, 3, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    for _ in range(2):
        _quad_step(opt, [w])
    sd = opt.state_dict()
    w2 = w.detach().clone().requires_grad_()
    opt2 = optim.Adam([w2], lr=0.1)
    opt2.load_state_dict(sd)
    for _ in range(2):
        _quad_step(opt, [w])
        _quad_step(opt2, [w2])
    np.testing.assert_array_equal(w.detach().numpy(), w2.detach().numpy())
    assert opt.state[w]["step"].item() == opt2.state[w2]["step"].item() == 4
    # the state_dict holds the live state tensors, as PyTorch's: still readable
    np.testing.assert_array_equal(sd["state"][0]["exp_avg"].numpy(), opt.state[w]["exp_avg"].numpy())


def test_lbfgs_still_works():
    w = funcgrad.tensor([1.5, -0.5], requires_grad=True)
    opt = optim.LBFGS([w], lr=1, max_iter=20)

    def closure():
        opt.zero_grad()
        loss = ((w - 1.0) ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    np.testing.assert_allclose(w.detach().numpy(), [1.0, 1.0], atol=1e-5)


def test_compiled_and_eager_steps_alternate():
    funcgrad.manual_seed(0)
    lin = funcgrad.nn.Linear(4, 3)
    opt = optim.Adam(lin.parameters(), lr=0.1)
    x = funcgrad.randn(8, 4)

    def step():
        opt.zero_grad()
        loss = lin(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    compiled = funcgrad.jit(step)
    ref_lin = funcgrad.nn.Linear(4, 3)
    ref_lin.load_state_dict(lin.state_dict())
    ref_opt = optim.Adam(ref_lin.parameters(), lr=0.1)
    for i in range(4):
        (compiled if i % 2 else step)()
        ref_opt.zero_grad()
        ref_lin(x).pow(2).mean().backward()
        ref_opt.step()
    for a, b in zip(lin.parameters(), ref_lin.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
