"""funcgrad.autocast / amp.GradScaler against torch: result dtypes per op, values and gradients
of an autocast forward, warnings, scaler arithmetic and state, jit."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import funcgrad

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

R = np.random.default_rng(0)
A, T = R.normal(size=(4, 4)), np.array([1, 2, 0, 3])

OPS = [
    ("matmul", lambda L, a, b: a @ a), ("mm", lambda L, a, b: L.mm(a, a)),
    ("linear", lambda L, a, b: L.nn.functional.linear(a, a)), ("linear_bias", lambda L, a, b: L.nn.functional.linear(a, a, a[0])),
    ("linear_mixed", lambda L, a, b: L.nn.functional.linear(b, a, a[0])),
    ("addmm", lambda L, a, b: L.addmm(a, a, a)), ("bmm", lambda L, a, b: L.bmm(a[None], a[None])),
    ("baddbmm", lambda L, a, b: L.baddbmm(a[None], a[None], a[None])),
    ("conv2d", lambda L, a, b: L.nn.functional.conv2d(a[None, None], a[None, None, :3, :3])),
    ("softmax32", lambda L, a, b: L.nn.functional.softmax(a, -1)),
    ("softmax16", lambda L, a, b: L.nn.functional.softmax(b, -1)),
    ("cross_entropy16", lambda L, a, b: L.nn.functional.cross_entropy(b, L.tensor(T))),
    ("mse16", lambda L, a, b: L.nn.functional.mse_loss(b, b)),
    ("bce_logits16", lambda L, a, b: L.nn.functional.binary_cross_entropy_with_logits(b, b.sigmoid())),
    ("add_mixed", lambda L, a, b: a + b), ("relu16", lambda L, a, b: L.relu(b)),
    ("sum16", lambda L, a, b: b.sum()), ("mm64", lambda L, a, b: a.double() @ a.double()),
    ("int", lambda L, a, b: L.tensor(T) @ L.tensor(T)),
]


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("oid,fn", OPS, ids=[o[0] for o in OPS])
def test_result_dtypes_match_torch(oid, fn, dt):
    got = []
    for L in (funcgrad, torch):
        a = L.tensor(A, dtype=L.float32)
        b = a.to(getattr(L, dt))
        with L.autocast("cpu", dtype=getattr(L, dt)):
            got.append(str(fn(L, a, b).dtype).split(".")[-1])
    assert got[0] == got[1]


def test_forward_and_grads_match_torch():
    w1, w2 = R.normal(size=(8, 4)), R.normal(size=(3, 8))
    outs = []
    for L in (funcgrad, torch):
        m = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.ReLU(), L.nn.Linear(8, 3))
        m.load_state_dict({"0.weight": L.tensor(w1, dtype=L.float32), "0.bias": L.zeros(8),
                           "2.weight": L.tensor(w2, dtype=L.float32), "2.bias": L.zeros(3)})
        x = L.tensor(A, dtype=L.float32)
        with L.autocast("cpu", dtype=L.bfloat16):
            y = m(x)
            loss = L.nn.functional.cross_entropy(y, L.tensor(T % 3))
        assert str(y.dtype).endswith("bfloat16") and str(loss.dtype).endswith("float32")
        loss.backward()
        assert str(m[0].weight.grad.dtype).endswith("float32")
        outs.append([y.float().detach().numpy(), loss.item(), m[0].weight.grad.numpy()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2)  # bfloat16 has 8 bits of mantissa


def test_state_nesting_decorator_and_threads():
    a = funcgrad.ones(2, 2)
    assert not funcgrad.is_autocast_enabled("cpu")

    @funcgrad.autocast("cpu")
    def f():
        return (a @ a).dtype

    assert f() is funcgrad.bfloat16
    with funcgrad.amp.autocast("cpu"):
        assert funcgrad.is_autocast_enabled("cpu") and not funcgrad.is_autocast_enabled()
        with funcgrad.autocast("cpu", enabled=False):
            assert (a @ a).dtype is funcgrad.float32
        seen = []
        th = threading.Thread(target=lambda: seen.append((a @ a).dtype))
        th.start()
        th.join()
        assert seen == [funcgrad.float32]  # thread-local
        assert (a @ a).dtype is funcgrad.bfloat16
    assert (a @ a).dtype is funcgrad.float32 and not funcgrad.is_autocast_enabled("cpu")


def _warns(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(i.category.__name__, str(i.message).replace("torch.", "funcgrad.")) for i in w]


WARN = [
    ("cuda_unavailable", lambda L: L.autocast("cuda").__enter__()),
    ("cpu_amp", lambda L: L.cpu.amp.autocast()),
    ("cuda_amp", lambda L: L.cuda.amp.autocast()),
    ("bad_dtype", lambda L: L.autocast("cpu", dtype=L.float32)),
    ("scaler_default", lambda L: L.amp.GradScaler()),
    ("scaler_cuda_amp", lambda L: L.cuda.amp.GradScaler()),
]


@pytest.mark.parametrize("wid,fn", WARN, ids=[w[0] for w in WARN])
def test_warnings_match_torch(wid, fn):
    if torch.cuda.is_available() or funcgrad.cuda.is_available():
        pytest.skip("CUDA present: these are the no-CUDA warnings")
    got, want = _warns(lambda: fn(funcgrad)), _warns(lambda: fn(torch))
    # PyTorch names its own modules in some texts ("torch.cuda.amp..."); funcgrad keeps them verbatim
    assert [c for c, _ in got] == [c for c, _ in want]
    assert [m.replace("funcgrad.", "") for _, m in got] == [m.replace("funcgrad.", "") for _, m in want]


def _scaler_run(L, grads_seq):
    w = L.nn.Parameter(L.tensor([1.0, 2.0]))
    opt = L.optim.Adam([w], lr=0.1)
    s = L.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    log = []
    for g in grads_seq:
        opt.zero_grad()
        s.scale((w * L.tensor(g)).sum()).backward()
        log.append(w.grad.numpy().copy())
        s.step(opt)
        s.update()
        log.append((w.detach().numpy().copy(), s.get_scale()))
    log.append(s.state_dict())
    return log


def test_grad_scaler_matches_torch():
    seq = [[1.0, 2.0], [np.inf, 1.0], [0.5, 0.5], [1.0, np.nan], [1.0, 1.0], [2.0, 1.0]]
    got, want = _scaler_run(funcgrad, seq), _scaler_run(torch, seq)
    for a, b in zip(got, want):
        if isinstance(a, tuple):
            np.testing.assert_allclose(a[0], b[0], rtol=1e-6)
            assert a[1] == b[1]
        elif isinstance(a, dict):
            assert a == b
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_grad_scaler_errors_and_disabled_match_torch():
    res = []
    for L in (funcgrad, torch):
        w = L.nn.Parameter(L.tensor([1.0]))
        opt = L.optim.SGD([w], lr=0.1)
        s = L.amp.GradScaler("cpu")
        s.scale(w.sum()).backward()
        s.unscale_(opt)
        errs = []
        for f in (lambda: s.unscale_(opt), lambda: (s.step(opt), s.step(opt))):
            try:
                f()
            except RuntimeError as e:
                errs.append(str(e))
        d = L.amp.GradScaler("cpu", enabled=False)
        errs += [d.get_scale(), d.state_dict(), float(d.scale(L.tensor(2.0)))]
        try:
            L.amp.GradScaler("cpu").load_state_dict({})
        except RuntimeError as e:
            errs.append(str(e))
        res.append(errs)
    assert res[0] == res[1]


def test_autocast_and_scaler_inside_jit_match_eager():
    def build():
        m = funcgrad.nn.Linear(4, 3)
        m.load_state_dict({"weight": funcgrad.tensor(A[:3], dtype=funcgrad.float32), "bias": funcgrad.zeros(3)})
        opt = funcgrad.optim.Adam(m.parameters(), lr=0.1)
        return m, opt, funcgrad.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)

    x = funcgrad.tensor(A, dtype=funcgrad.float32)
    scale_in = [funcgrad.tensor(1.0), funcgrad.tensor(float("inf")), funcgrad.tensor(1.0)]

    def make_step(m, opt, s):
        def step(k):
            opt.zero_grad()
            with funcgrad.autocast("cpu"):
                loss = (m(x).float() * k).pow(2).mean()
            s.scale(loss).backward()
            s.step(opt)
            s.update()
            return loss
        return step

    me, oe, se = build()
    eager = make_step(me, oe, se)
    mc, oc, sc = build()
    comp = funcgrad.jit(make_step(mc, oc, sc))
    prev = mc.weight.detach().numpy().copy()
    for k in scale_in:
        le, lc = eager(k), comp(k)
        # XLA keeps excess precision for bfloat16 intermediates inside one program
        # (xla_allow_excess_precision), so compiled and eager round differently: bf16 tolerance
        np.testing.assert_allclose(lc.item(), le.item(), rtol=2e-2)
        np.testing.assert_allclose(mc.weight.detach().numpy(), me.weight.detach().numpy(), rtol=2e-2, atol=1e-2)
        assert sc.get_scale() == se.get_scale()
        now = mc.weight.detach().numpy().copy()
        assert (now == prev).all() == (not np.isfinite(k.item()))  # the inf step was skipped
        prev = now
